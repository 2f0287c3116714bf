// Drives the reference page (/play) in Debian's headless chromium and prints one JSON summary
// line. Two scenarios, at any viewport width:
//
//   MODE=create  the page creates a match (operator key typed into the create form), its other
//                seats are the page's in-page random bots (or OTHERS=computer: the server's bot
//                at LEVEL, PLAYERS seats), this script clicks seat 0's buttons; with CUT=1 it
//                closes the page's WebSocket once, mid-hand (cutMidHand), and reports the
//                transport, the reconnections and the versions the log shows.
//   MODE=join    a match created beforehand (MATCH_ID, SEAT0, SEAT1, SPECTATOR tokens): one page
//                joins seat 0 through the "join" form, a second joins seat 1 with a
//                #match=..&seat=.. link, a third spectates through the "spectate" form; the
//                script clicks the two seats' buttons at random until the match is over.
//   MODE=invite  in a browser whose language is LOCALE (pt-BR), a page creates a two-seat
//                match with names (NAMES), the other seat for "other people"; a second page
//                opens the invite link of seat 1 and is switched to Spanish with the page's
//                language switch; the script clicks both seats' buttons to the end.
//   MODE=quick   two pages press "quick match" (operator key typed, names Ana and Bia) in the
//                same pool; each waits on its ticket's stream until a table is formed, joins
//                its seat; the script clicks both seats' buttons to the end.
//
// Every page is checked for horizontal overflow (nothing may be wider than the viewport),
// page errors, a readable log (sentences in the page's language, no key=value), and that a
// spectator never sees a card in hand or an action button. The summary also reports what the
// test checks against the server and the rules engine: the seat pages' hands with their marks
// (manilhas, top cards), the team labels and the invite links offered.
//
//   BASE=http://127.0.0.1:8080 SHOT_DIR=/tmp/shots [MODE=create] [WIDTH=390 HEIGHT=844 MOBILE=1]
//   [API_KEY=...] [PRESET=paulista] node play_match.mjs
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = process.env;
const base = env.BASE;
const shotDir = env.SHOT_DIR;
const mode = env.MODE || "create";
const width = Number(env.WIDTH || 1280);
const height = Number(env.HEIGHT || 900);
const mobile = env.MOBILE === "1";
const tag = `${mode}-${width}`;
const budgetMs = Number(env.BUDGET_MS || 150000);
const maxClicks = 800;
if (!base || !shotDir) throw new Error("set BASE and SHOT_DIR");

const started = Date.now();
const profile = mkdtempSync(join(tmpdir(), "truco-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width, height },
  deviceScaleFactor: 1,
  isMobile: mobile,
  hasTouch: mobile,
  ...(env.LOCALE ? { locale: env.LOCALE } : {}),  // the browser's language (navigator.languages)
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const problems = [];
const shots = [];
let clicks = 0;
let cardClicks = 0; // cards played by clicks: a match may end before any (a falta envido accepted)
const summary = { mode, width, matchId: "", clicks: 0, status: {}, logLines: {}, fragmentLeft: {}, shots,
                  marks: [], teams: {}, titles: {}, invites: {}, lang: {} };
// The sentences a finished match's log must have, per language: a card played (when a click
// played one), the match won.
const SENTENCES = { en: [/ plays /, /wins the match/], pt: [/ joga /, /vence a partida/], es: [/ juega /, /gana la partida/] };

function watch(page, name) {
  page.on("pageerror", (e) => problems.push(`${name} pageerror: ${e.message}`));
  page.on("console", (m) => {
    // A 409 (STALE_VERSION: an in-page bot or a click raced the stream) is retried by design.
    if (m.type() === "error" && !/status of (409|[45]\d\d)/.test(m.text())) problems.push(`${name} console: ${m.text()}`);
  });
  // Refused requests are reported with what was asked and why (the console only has the status).
  page.on("response", async (r) => {
    if (r.status() < 400 || r.status() === 409) return;
    let body = "";
    try { body = await r.text(); } catch { body = "(no body)"; }
    // The same race at the match's end: a click (paulista's truco may be called out of turn)
    // sent while an in-page bot's last card ended the match is refused as MATCH_NOT_ACTIVE,
    // and the stream then shows the match over.
    if (r.status() === 400 && new URL(r.url()).pathname.endsWith("/actions") && body.includes('"MATCH_NOT_ACTIVE"')) return;
    body = body.slice(0, 300);
    const sent = (r.request().postData() || "").slice(0, 300);
    problems.push(`${name}: ${r.request().method()} ${new URL(r.url()).pathname} -> ${r.status()} ${body} (sent ${sent})`);
  });
  page.setDefaultTimeout(20000);
}
let firstPageUsed = false;
async function newPage(name) {
  const page = !firstPageUsed && context.pages().length ? context.pages()[0] : await context.newPage();
  firstPageUsed = true;
  watch(page, name);
  return page;
}
const state = (page) => page.getAttribute("#status", "data-state");
async function overflow(page, name) {
  const w = await page.evaluate(() => document.documentElement.scrollWidth);
  if (w > width) problems.push(`${name}: page is ${w}px wide in a ${width}px viewport`);
}
async function shoot(page, name) {
  const path = join(shotDir, `${tag}-${name}.png`);
  await page.screenshot({ path, fullPage: true });
  shots.push(path);
}
// What a seat page shows in hand with the marks it puts on cards, with the turned-up card.
async function snapMarks(page, name) {
  const s = await page.evaluate(() => ({
    version: game.obs ? String(game.obs.version) : "", turnUp: (game.obs && game.obs.turnUp) || "",
    cards: Array.from(document.querySelectorAll("#hand .card[data-card]")).map((c) => [c.dataset.card, c.dataset.mark || null]),
    legend: (document.querySelector("#marks") || {}).textContent || "",
  }));
  const last = summary.marks.filter((m) => m.page === name).pop();
  if (s.cards.length && (!last || last.version !== s.version)) summary.marks.push({ page: name, ...s });
}
// The page's words in the language it shows: every key of English has a translation, and no
// English string of the page's own is left on it (form labels, buttons, titles, options).
async function languageCheck(page, name, code) {
  summary.lang[name] = await page.evaluate(() => document.documentElement.lang);
  const missing = await page.evaluate((code) => {
    const out = [];
    const keys = (en, other, path) => {
      for (const [k, v] of Object.entries(en)) {
        if (!other || !(k in other)) out.push(`no ${code} word for ${path}${k}`);
        else if (v && typeof v === "object") keys(v, other[k], `${path}${k}.`);
      }
    };
    keys(WORDS.en, WORDS[code], "");
    const shown = Array.from(document.body.children).filter((e) => e.tagName !== "SCRIPT").map((e) => e.textContent).join("\n");
    for (const [k, v] of Object.entries(WORDS.en)) {
      if (typeof v === "string" && v.length > 3 && v !== WORDS[code][k] && !v.includes("<") && shown.includes(v)) out.push(`English left on the page: ${k}: ${v}`);
    }
    return out;
  }, code);
  for (const m of missing) problems.push(`${name}: ${m}`);
}
async function clickOne(page) {
  const buttons = page.locator("#actions button:not([disabled])");
  const n = await buttons.count();
  if (n === 0) return false;
  try {
    const button = buttons.nth(Math.floor(Math.random() * n));
    const action = (await button.getAttribute("data-action", { timeout: 5000 })) || "";
    await button.click({ timeout: 5000 });
    clicks += 1;
    if (action.includes('"playCard"')) cardClicks += 1;
    return true;
  } catch (e) {
    return false; // the stream re-rendered the buttons between count() and click(): look again
  }
}
async function checkSpectator(page) {
  const seen = await page.evaluate(() => ({
    cards: document.querySelectorAll("#hand .card[data-card]").length,
    buttons: document.querySelectorAll("#actions button").length,
  }));
  if (seen.cards || seen.buttons) problems.push(`spectator sees ${seen.cards} cards in hand, ${seen.buttons} buttons`);
}
async function finalChecks(page, name, code = "en") {
  summary.status[name] = (await page.textContent("#status")) || "";
  if ((await state(page)) !== "over") problems.push(`${name}: match not over: ${summary.status[name]}`);
  const lines = await page.$$eval("#log li", (els) => els.map((e) => e.textContent));
  summary.logLines[name] = lines.length;
  const raw = lines.filter((l) => /\w=\S/.test(l));
  if (raw.length) problems.push(`${name}: key=value lines in the log: ${raw.slice(0, 3).join(" | ")}`);
  const [played, won] = SENTENCES[code];
  for (const pattern of cardClicks ? [played, won] : [won]) {
    if (!lines.some((l) => pattern.test(l))) problems.push(`${name}: no ${pattern} sentence in the log (${code})`);
  }
  summary.fragmentLeft[name] = await page.evaluate(() => location.hash);
  summary.teams[name] = await page.$$eval("#scoreline .team", (els) => els.map((e) => e.textContent));
  summary.titles[name] = (await page.textContent("#me-title")) || "";
  summary.invites[name] = await page.$$eval("#invite-list input", (els) => els.map((e) => e.id));
  await overflow(page, name);
}

// Clicks two seat pages' buttons at random until neither can play (the match is over).
async function playBoth(seat0, seat1, watcher, shotNames = ["seat0", "spectator"]) {
  let idle = 0;
  while (Date.now() - started < budgetMs && clicks < maxClicks) {
    if ((await state(seat0)) !== "playing" && (await state(seat1)) !== "playing") break;
    await snapMarks(seat0, "seat0"); await snapMarks(seat1, "seat1");
    const moved = (await clickOne(seat0)) || (await clickOne(seat1));
    if (!moved) { await seat0.waitForTimeout(40); idle += 1; } else idle = 0;
    if (idle > 400) { problems.push("nobody could move for 16 s"); break; }
    if (clicks >= 4 && moved && !shots.length) {
      if (watcher) await checkSpectator(watcher);
      await shoot(seat0, shotNames[0]); await shoot(watcher || seat1, shotNames[1]);
    }
    if (watcher && clicks % 10 === 0 && moved) await checkSpectator(watcher);
  }
}
// Every page connected and showing the match (its first observation drawn).
const connected = (pages) => Promise.all(Object.entries(pages).map(([name, page]) =>
  page.waitForFunction(() => document.querySelector("#status").dataset.state === "playing" && document.body.dataset.version,
    null, { timeout: 20000 }).catch(() => problems.push(`${name} never connected`))));

async function createAndPlay() {
  const page = await newPage("creator");
  pages = { creator: page };
  await page.goto(`${base}/play?delay=20`);
  if (env.API_KEY) await page.fill("#apikey", env.API_KEY);
  await page.fill("#preset", env.PRESET || "paulista");
  await page.selectOption("#others", env.OTHERS || "bot");
  if (env.LEVEL) await page.selectOption("#level", env.LEVEL);
  if (env.PLAYERS) await page.fill("#players", env.PLAYERS);
  await overflow(page, "creator (form)");
  await page.click("#create");
  await page.waitForFunction(() => document.querySelector("#status").dataset.state === "playing");
  summary.matchId = await page.evaluate(() => game.id);
  if (await page.inputValue("#apikey")) problems.push("the operator key stayed in the form after creating");
  while (Date.now() - started < budgetMs && clicks < maxClicks) {
    await page.waitForFunction(
      () => ["over", "error"].includes(document.querySelector("#status").dataset.state) ||
        document.querySelector("#actions button:not([disabled])") !== null,
      null, { timeout: 30000 },
    );
    if ((await state(page)) !== "playing") break;
    await snapMarks(page, "creator");
    if (env.CUT === "1" && !summary.cut) await cutMidHand(page);
    await clickOne(page);
    if (clicks === 3 && !shots.length) { await overflow(page, "creator (playing)"); await shoot(page, "playing"); }
  }
  await page.waitForTimeout(300);
  if (!shots.length) await shoot(page, "playing");  // a very short match: the final table
  await finalChecks(page, "creator");
  Object.assign(summary, await page.evaluate(() => ({
    transport: document.body.dataset.transport || "",
    connects: game.stream && game.stream.connects !== undefined ? game.stream.connects : 0,
    versions: game.entries.filter((e) => e.version !== undefined).map((e) => Number(e.version)),
    lastVersion: game.lastVersion,
  })));
}
// CUT=1: once seat 0 has played a card of its hand and holds the others (mid-hand), its
// WebSocket is closed under the page; the page must reconnect and resume by itself.
async function cutMidHand(page) {
  const held = await page.evaluate(() => document.querySelectorAll("#hand .card[data-card]").length);
  if (held !== 1 && held !== 2) return;
  summary.cut = await page.evaluate(() => {
    const link = game.stream;
    if (!link || !link.ws || link.ws.readyState !== WebSocket.OPEN) return null;
    const at = { version: game.lastVersion, connects: link.connects };
    link.ws.close(4000, "cut by the test");
    return at;
  });
  if (summary.cut) {
    await page.waitForFunction((n) => game.stream.connects > n, summary.cut.connects, { timeout: 30000 })
      .catch(() => problems.push("the page did not reconnect after its socket was cut"));
  }
}

async function joinAndPlay() {
  const id = env.MATCH_ID;
  summary.matchId = id;
  const seat0 = await newPage("seat0");
  const seat1 = await newPage("seat1");
  const watcher = await newPage("spectator");
  pages = { seat0, seat1, spectator: watcher };
  // seat 0: the join form
  await seat0.goto(`${base}/play`);
  await seat0.click("#join-summary");
  await seat0.fill("#join-match", id);
  await seat0.fill("#join-token", env.SEAT0);
  await seat0.click("#join");
  // seat 1: a link with the token after '#'
  await seat1.goto(`${base}/play#match=${encodeURIComponent(id)}&seat=${encodeURIComponent(env.SEAT1)}`);
  // the spectator: the spectate form
  await watcher.goto(`${base}/play`);
  await watcher.click("#watch-summary");
  await watcher.fill("#watch-match", id);
  await watcher.fill("#watch-token", env.SPECTATOR);
  await watcher.click("#watch");
  await connected(pages);
  const titles = [await seat0.textContent("#me-title"), await seat1.textContent("#me-title")];
  if (!titles[0].startsWith("Seat 0") || !titles[1].startsWith("Seat 1")) problems.push("seat titles: " + titles.join(" / "));
  await playBoth(seat0, seat1, watcher);
  await watcher.waitForFunction(() => document.querySelector("#status").dataset.state !== "playing", null,
    { timeout: 15000 }).catch(() => {});
  await seat0.waitForTimeout(300);
  if (!shots.length) { await shoot(seat0, "seat0"); await shoot(watcher, "spectator"); }
  for (const [name, page] of Object.entries(pages)) await finalChecks(page, name);
  await checkSpectator(watcher);
}

// In the browser's language (LOCALE: Portuguese), create a two-seat match with names for
// other people; seat 1 comes by its invite link and switches its page to Spanish.
async function inviteAndPlay() {
  const seat0 = await newPage("seat0");
  pages = { seat0 };
  await seat0.goto(`${base}/play?delay=20`);
  await languageCheck(seat0, "seat0 (form)", "pt");
  if (env.API_KEY) await seat0.fill("#apikey", env.API_KEY);
  await seat0.fill("#preset", env.PRESET || "argentine");
  await seat0.fill("#names", env.NAMES || "");
  await seat0.selectOption("#others", "invite");
  await overflow(seat0, "seat0 (form)");
  await seat0.click("#create");
  await seat0.waitForFunction(() => document.querySelector("#status").dataset.state === "playing");
  summary.matchId = await seat0.evaluate(() => game.id);
  const link = await seat0.inputValue("#invite-seat-1").catch(() => "");
  if (!link.includes("#match=")) { problems.push("no invite link for seat 1"); return; }
  const seat1 = await newPage("seat1");
  pages.seat1 = seat1;
  await seat1.goto(link);
  await connected(pages);
  await seat1.selectOption("#lang", "es");
  await seat1.waitForFunction(() => document.documentElement.lang === "es");
  await playBoth(seat0, seat1, null, ["pt-seat0", "es-seat1"]);
  if (!shots.length) { await shoot(seat0, "pt-seat0"); await shoot(seat1, "es-seat1"); }
  await finalChecks(seat0, "seat0", "pt");
  await finalChecks(seat1, "seat1", "es");
  await languageCheck(seat0, "seat0", "pt");
  await languageCheck(seat1, "seat1", "es");
}

// Two pages press "quick match" and find each other through the pool.
async function quickAndPlay() {
  const a = await newPage("ana");
  const b = await newPage("bia");
  pages = { ana: a, bia: b };
  for (const [page, name] of [[a, "Ana"], [b, "Bia"]]) {
    await page.goto(`${base}/play`);
    await page.click("#quick-summary");
    if (env.API_KEY) await page.fill("#quick-apikey", env.API_KEY);
    await page.fill("#quick-name", name);
    await overflow(page, `${name} (form)`);
    await page.click("#quick");
  }
  await connected(pages);
  for (const [name, page] of Object.entries(pages)) {
    summary.matchIds = summary.matchIds || {};
    summary.matchIds[name] = await page.evaluate(() => game.id);
    summary.seats = summary.seats || {};
    summary.seats[name] = await page.evaluate(() => game.seat);
    if (await page.inputValue("#quick-apikey")) problems.push(`${name}: the operator key stayed in the form`);
  }
  summary.matchId = summary.matchIds.ana;
  await playBoth(a, b, null, ["quick-ana", "quick-bia"]);
  if (!shots.length) { await shoot(a, "quick-ana"); await shoot(b, "quick-bia"); }
  await finalChecks(a, "ana");
  await finalChecks(b, "bia");
}

let pages = {};
try {
  if (mode === "create") await createAndPlay();
  else if (mode === "invite") await inviteAndPlay();
  else if (mode === "quick") await quickAndPlay();
  else await joinAndPlay();
} catch (e) {
  problems.push("script: " + (e && e.stack ? e.stack : e));
  for (const [name, page] of Object.entries(pages)) {
    try {
      const log = await page.$$eval("#log li", (els) => els.slice(-15).map((x) => x.textContent));
      problems.push(`${name} log tail: ${log.join(" | ")}; status: ${await page.textContent("#status")}`);
      await shoot(page, "failed-" + name);
    } catch (e2) { problems.push(`${name}: no diagnostics: ${e2}`); }
  }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
summary.clicks = clicks;
summary.cardClicks = cardClicks;
summary.problems = problems;
summary.seconds = (Date.now() - started) / 1000;
console.log(JSON.stringify(summary));

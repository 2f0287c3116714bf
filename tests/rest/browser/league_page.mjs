// Drives a league's public page (/leagues/{public_id}) in Debian's headless chromium and prints
// one JSON summary line (tests/rest/test_browser.py, test_the_public_league_page_*).
//
//   PAGES=id1,id2   finished leagues: each page's standings rows, rounds and bracket matches
//                   as a person sees them, whether anything overflows the viewport, a
//                   screenshot; and the first one inside an iframe of another page.
//   LIVE=id         a running league: the page is opened, "ready" is printed with what it
//                   shows, and the script waits (BUDGET_MS) for the page to show a result the
//                   test records meanwhile, without a reload.
//
//   BASE=http://127.0.0.1:8080 SHOT_DIR=/tmp/shots WIDTH=390 HEIGHT=844 MOBILE=1 node league_page.mjs
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:http";
import { join } from "node:path";

const env = process.env;
const base = env.BASE;
const width = Number(env.WIDTH || 390);
const height = Number(env.HEIGHT || 844);
const mobile = env.MOBILE === "1";
const budgetMs = Number(env.BUDGET_MS || 60000);
if (!base || !env.SHOT_DIR) throw new Error("set BASE and SHOT_DIR");

const profile = mkdtempSync(join(tmpdir(), "truco-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width, height },
  deviceScaleFactor: 1,
  isMobile: mobile,
  hasTouch: mobile,
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const problems = [];
const summary = { width, pages: {}, shots: [], framed: null, live: null, problems };
const requested = [];
// Another site that frames the page: a page of its own, on another port (another origin),
// served by this script on the loopback (chromium keeps a public page from framing a loopback
// address, so the test's embedder is on the loopback too).
const embedder = createServer((req, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end(`<!doctype html><p>Our club</p><iframe id="f" src="${base}/leagues/${req.url.slice(1)}" width="360" height="600"></iframe>`);
});
await new Promise((ok) => embedder.listen(0, "127.0.0.1", ok));
const EMBEDDER = `http://127.0.0.1:${embedder.address().port}/`;

function watch(page, name) {
  page.on("pageerror", (e) => problems.push(`${name} pageerror: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") problems.push(`${name} console: ${m.text()}`); });
  page.on("request", (r) => requested.push(r.url()));
}

// What a person sees: the standings rows, every round's lines, the bracket's matches.
async function seen(page) {
  return page.evaluate(() => {
    const text = (e) => (e ? e.textContent.trim() : "");
    const root = document.documentElement;
    const table = document.getElementById("standings");
    const box = document.getElementById("bracket-box");
    return {
      title: text(document.getElementById("name")),
      meta: text(document.getElementById("meta")),
      version: window.leaguePage.version,
      overflow: root.scrollWidth > window.innerWidth,
      tableOverflow: table.scrollWidth > table.clientWidth,
      tableRight: table.getBoundingClientRect().right,
      standings: [...table.querySelectorAll("tbody tr")].map((tr) => {
        const cells = [...tr.children];
        const name = cells[1];
        return { rank: text(cells[0]), name: name.title || text(name), score: text(cells[2]),
                 wdl: text(cells[3]), nameVisible: name.getBoundingClientRect().width > 20 };
      }),
      rounds: [...document.querySelectorAll("#rounds li")].map((li) => ({
        round: Number(li.dataset.round), table: Number(li.dataset.table),
        who: text(li.querySelector(".who")), won: [...li.querySelectorAll(".won")].map(text),
        result: text(li.querySelector(".res")),
      })),
      bracketShown: !document.getElementById("bracket-section").hidden,
      bracketScrolls: box.scrollWidth > box.clientWidth,
      bracket: [...document.querySelectorAll("#bracket-box .match")].map((m) => ({
        label: m.dataset.label,
        sides: [...m.querySelectorAll(".side")].map((s) => text(s.firstElementChild)),
        won: text(m.querySelector(".side.won span")),
        group: m.closest(".bracket").dataset.group,
      })),
    };
  });
}

async function open(id, name) {
  const page = await context.newPage();
  watch(page, name);
  await page.goto(`${base}/leagues/${id}`);
  await page.waitForFunction(() => window.leaguePage && window.leaguePage.renders > 0, null, { timeout: 30000 });
  return page;
}

try {
  const ids = (env.PAGES || "").split(",").filter(Boolean);
  for (const [i, id] of ids.entries()) {
    const page = await open(id, `page${i}`);
    summary.pages[id] = await seen(page);
    const shot = join(env.SHOT_DIR, `league-${width}-${i}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    summary.shots.push(shot);
    await page.close();
  }
  if (ids.length) {  // embedded: another page frames it
    const host = await context.newPage();
    watch(host, "host");
    await host.goto(EMBEDDER + ids[0]);
    const frame = host.frameLocator("#f");
    try {
      await frame.locator("#standings tbody tr").first().waitFor({ timeout: 30000 });
    } catch (e) {
      const frames = await Promise.all(host.frames().map(async (f) => [f.url(), (await f.content()).slice(0, 300)]));
      problems.push(`framed page not rendered: ${JSON.stringify(frames)}`);
      throw e;
    }
    summary.framed = await frame.locator("#standings tbody tr").count();
    await host.close();
  }
  if (env.LIVE) {
    const page = await open(env.LIVE, "live");
    const before = await seen(page);
    console.log(JSON.stringify({ ready: true, version: before.version, rounds: before.rounds }));
    await page.waitForFunction(
      (v) => window.leaguePage.version > v && !document.querySelector("#rounds .res").textContent.includes("playing"),
      before.version, { timeout: budgetMs, polling: 200 });
    summary.live = { before, after: await seen(page) };
    await page.close();
  }
  const elsewhere = requested.filter((u) => !u.startsWith(base) && !u.startsWith(EMBEDDER) && !u.startsWith("data:"));
  if (elsewhere.length) problems.push(`requests elsewhere: ${elsewhere.join(" ")}`);
} catch (e) {
  problems.push(`script: ${e && e.stack ? e.stack : e}`);
} finally {
  await context.close();
  embedder.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify(summary));

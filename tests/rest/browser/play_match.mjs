// Plays one full match on the reference page (/play) in Debian's headless chromium:
// the other seats are the page's in-page random bots, this script clicks seat 0's legal
// action buttons at random. Prints one JSON summary line; writes a screenshot.
//
//   BASE=http://127.0.0.1:8080 SCREENSHOT=/tmp/x.png [PRESET=paulista] [API_KEY=...] node play_match.mjs
import { chromium } from "playwright-core";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const base = process.env.BASE;
const screenshot = process.env.SCREENSHOT;
const preset = process.env.PRESET || "paulista";
const budgetMs = Number(process.env.BUDGET_MS || 150000);
const maxClicks = 600;
if (!base || !screenshot) throw new Error("set BASE and SCREENSHOT");

const started = Date.now();
const profile = mkdtempSync(join(tmpdir(), "truco-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
const problems = [];
let clicks = 0;
let status = "";
let matchId = "";
try {
  const page = context.pages()[0] || (await context.newPage());
  page.on("pageerror", (e) => problems.push("pageerror: " + e.message));
  page.on("console", (m) => { if (m.type() === "error") problems.push("console: " + m.text()); });
  page.setDefaultTimeout(20000);
  await page.goto(`${base}/play?delay=20`);
  if (process.env.API_KEY) await page.fill("#apikey", process.env.API_KEY);
  await page.fill("#preset", preset);
  await page.selectOption("#others", "bot");
  await page.click("#create");
  await page.waitForFunction(() => document.querySelector("#status").dataset.state === "playing");
  matchId = await page.evaluate(() => game.id);

  while (Date.now() - started < budgetMs && clicks < maxClicks) {
    await page.waitForFunction(
      () => ["over", "error"].includes(document.querySelector("#status").dataset.state) ||
        document.querySelector("#actions button:not([disabled])") !== null,
      null, { timeout: 30000 },
    );
    const state = await page.getAttribute("#status", "data-state");
    if (state !== "playing") break;
    const buttons = page.locator("#actions button:not([disabled])");
    const n = await buttons.count();
    if (n === 0) continue;
    const pick = buttons.nth(Math.floor(Math.random() * n));
    try {
      await pick.click({ timeout: 5000 });
      clicks += 1;
    } catch (e) {
      // The SSE update re-rendered the buttons between count() and click(): look again.
    }
  }
  status = (await page.textContent("#status")) || "";
  const state = await page.getAttribute("#status", "data-state");
  if (state !== "over") problems.push(`match not over: state=${state} status=${status}`);
  await page.waitForTimeout(300);
  await page.screenshot({ path: screenshot, fullPage: true });
} catch (e) {
  problems.push("script: " + (e && e.stack ? e.stack : e));
  try {
    const page = context.pages()[0];
    problems.push("page log tail: " + ((await page.textContent("#log")) || "").split("\n").slice(-25).join(" | "));
    problems.push("status: " + (await page.textContent("#status")) + " / " + (await page.textContent("#action-error")));
    await page.screenshot({ path: screenshot, fullPage: true });
  } catch (e2) { problems.push("no diagnostics: " + e2); }
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify({ matchId, clicks, status, problems, seconds: (Date.now() - started) / 1000 }));

// Runs one JavaScript block of the documentation in Debian's headless chromium, on a page of
// the server's own origin, as the body of an async function of BASE, MATCH_ID and TOKENS;
// prints what it returns (or the error it threw, and the page's errors) as one JSON line.
//
//   BASE=http://127.0.0.1:8080 MATCH_ID=... TOKENS='["tc1...","tc1..."]' SNIPPET=file.js node run_snippet.mjs
import { chromium } from "playwright-core";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const env = process.env;
const code = readFileSync(env.SNIPPET, "utf8");
const profile = mkdtempSync(join(tmpdir(), "truco-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"],
});
const problems = [];
let result = null;
try {
  const page = await context.newPage();
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  await page.goto(`${env.BASE}/openapi.json`);
  result = await page.evaluate(
    async ([body, base, matchId, tokens]) => {
      const AsyncFunction = (async () => {}).constructor;
      return await new AsyncFunction("BASE", "MATCH_ID", "TOKENS", body)(base, matchId, tokens);
    },
    [code, env.BASE, env.MATCH_ID, JSON.parse(env.TOKENS)],
  );
} catch (err) {
  problems.push(String(err && err.message ? err.message : err));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
console.log(JSON.stringify({ result, problems }));

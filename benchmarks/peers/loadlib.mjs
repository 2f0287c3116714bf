// What the peers' load generators share: options, the server's CPU from /proc, the measured
// window and the one JSON line of figures they print.
import { readFileSync } from "node:fs";

export function options() {
  const args = process.argv.slice(2);
  const get = (name, fallback) => {
    const at = args.indexOf(`--${name}`);
    return at >= 0 ? args[at + 1] : fallback;
  };
  return {
    url: get("url", "http://127.0.0.1:8000"),
    matches: Number(get("matches", 200)),
    warmup: Number(get("warmup", 2)),
    seconds: Number(get("seconds", 8)),
    pid: Number(get("pid", 0)),
    clk: Number(get("clk", 100)),
  };
}

/** user + system CPU seconds of a process (Linux /proc; 0 without a pid). */
export function cpuSeconds(pid, clk) {
  if (!pid) return 0;
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / clk;
}

/** How long the first move may take to come (the server starting its matches on a busy machine). */
const READY_S = 120;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A slot saw ``n`` more moves: counted in ``figures.moves`` while ``figures.measuring``. */
export function countMoves(figures, n) {
  figures.seen += n;
  if (figures.measuring) figures.moves += n;
}

/**
 * Run ``slots`` (each an async function of its index and the shared figures, looping until
 * ``figures.stop``), wait for the first move (at most ``READY_S``), warm up, measure
 * ``seconds``, print the figures as one JSON line, exit. Slots report moves with ``countMoves``.
 */
export async function measure(opts, slot) {
  const figures = { moves: 0, seen: 0, finished: 0, errors: 0, measuring: false, stop: false };
  // A slot whose match fails (a refused or timed-out request on a busy machine) is counted
  // and starts a new match, so the load stays at ``matches`` concurrent matches.
  const keep = async (i) => {
    while (!figures.stop) {
      try {
        await slot(i, figures);
      } catch (err) {
        figures.errors += 1;
        if (figures.errors < 5) console.error(String(err && err.stack ? err.stack : err));
        await sleep(100);
      }
    }
  };
  for (let i = 0; i < opts.matches; i++) keep(i);
  const ready = performance.now();
  while (figures.seen === 0 && performance.now() - ready < READY_S * 1000) await sleep(20);
  await sleep(opts.warmup * 1000);
  const cpu0 = cpuSeconds(opts.pid, opts.clk);
  const own0 = process.cpuUsage();
  const t0 = performance.now();
  figures.moves = 0;
  figures.finished = 0;
  figures.measuring = true;
  await sleep(opts.seconds * 1000);
  figures.measuring = false;
  const elapsed = (performance.now() - t0) / 1000;
  const cpu = cpuSeconds(opts.pid, opts.clk) - cpu0;
  const own = process.cpuUsage(own0);
  figures.stop = true;
  console.log(
    JSON.stringify({
      moves: figures.moves,
      seconds: elapsed,
      server_cpu_s: cpu,
      load_cpu_s: (own.user + own.system) / 1e6,
      matches_finished: figures.finished,
      errors: figures.errors,
    }),
  );
  process.exit(0);
}

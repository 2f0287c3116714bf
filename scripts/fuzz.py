"""The long form of the coverage-guided fuzzing (the test suite runs a bounded one,
tests/fuzz/test_atheris_targets.py): every atheris target of tests/fuzz/targets.py for
``--seconds`` each, from the committed seeds, in a subprocess on this machine only (the REST
target serves its calls in process, without sockets).

    .venv/bin/python scripts/fuzz.py --seconds 600 [--targets records,rest] [--out docs/reliability.md]

It prints, per target, the inputs run, the coverage reached (libFuzzer's ``cov``: the
instrumented branches of the project's code that some input reached, and ``ft``, its finer
features) and the findings (the oracle's message, and the input file that raised it, kept
under ``--artifacts``). ``--out`` rewrites that page's section between
``<!-- fuzz:atheris -->`` and ``<!-- fuzz:atheris:end -->``. Exit status 1 when anything was
found.

Each target imports the project from its source, compiled modules included (atheris follows
Python's branches only); ``TRUCO_FUZZ_BUILD=as-built`` runs the compiled build where the
checkout has one (tests/fuzz/targets.py, :data:`BUILD_ENV`).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fuzz import targets  # noqa: E402

BEGIN, END = "<!-- fuzz:atheris -->", "<!-- fuzz:atheris:end -->"


@dataclass
class Run:
    target: str
    seconds: float
    runs: int
    rate: int
    """libFuzzer's own inputs a second (start-up left out)."""
    cov: int
    ft: int
    corpus: int
    finding: str | None
    artifact: str | None


def _last(pattern: str, text: str) -> int:
    found = re.findall(pattern, text)
    return int(found[-1]) if found else 0


def run_target(name: str, seconds: int, artifacts: Path) -> Run:
    with tempfile.TemporaryDirectory(prefix=f"truco-fuzz-{name}-") as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        prefix = artifacts / f"{name}-"
        t0 = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.fuzz.targets",
                name,
                f"-max_total_time={seconds}",
                f"-artifact_prefix={prefix}",
                "-print_final_stats=1",
                str(corpus),
                str(targets.CORPUS / name),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=seconds + 300,
        )
        elapsed = time.monotonic() - t0
        out = done.stdout + done.stderr
        runs = _last(r"Done (\d+) runs", out) or _last(r"stat::number_of_executed_units:\s+(\d+)", out)
        if not runs:
            runs = _last(r"#(\d+)\s", out)
        corpus_size = len(list(corpus.iterdir()))
    finding = artifact = None
    if done.returncode != 0:
        lines = [x for x in out.splitlines() if x.startswith("Finding: ") or "Error:" in x]
        finding = lines[0] if lines else f"exit status {done.returncode}: {out[-500:]}"
        written = re.findall(r"Test unit written to (\S+)", out)
        artifact = written[-1] if written else None
    return Run(
        target=name,
        seconds=elapsed,
        runs=runs,
        rate=_last(r"exec/s: (\d+)", out),
        cov=_last(r"cov: (\d+)", out),
        ft=_last(r"ft: (\d+)", out),
        corpus=corpus_size,
        finding=finding,
        artifact=artifact,
    )


def markdown(results: list[Run], seconds: int, started: str, machine: str) -> str:
    found = [r for r in results if r.finding]
    out = [
        f"Run {started} on {machine}, with `.venv/bin/python scripts/fuzz.py --seconds {seconds}` "
        f"(atheris {_atheris_version()}): **{len(found)} findings**.",
        "",
        "| target | seconds (with start-up) | inputs run | inputs/s | coverage (cov / ft) | corpus kept "
        "| finding |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        out.append(
            f"| {r.target} | {r.seconds:.0f} | {r.runs:,} | {r.rate:,} | {r.cov:,} / {r.ft:,} | {r.corpus:,} "
            f"| {r.finding or 'none'} |"
        )
    return "\n".join(out) + "\n"


def _atheris_version() -> str:
    from importlib.metadata import version

    return version("atheris")


def write_section(path: Path, text: str) -> None:
    page = path.read_text()
    if BEGIN not in page or END not in page:
        raise SystemExit(f"{path} has no {BEGIN} ... {END} section")
    head, rest = page.split(BEGIN, 1)
    path.write_text(head + BEGIN + "\n" + text + END + rest.split(END, 1)[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="per target (default 60)")
    parser.add_argument("--targets", default=",".join(targets.TARGETS), help="comma-separated")
    parser.add_argument("--artifacts", type=Path, default=Path("fuzz-findings"), help="where findings go")
    parser.add_argument("--out", type=Path, help="rewrite the fuzz:atheris section of this page")
    args = parser.parse_args(argv)
    names = args.targets.split(",")
    unknown = set(names) - set(targets.TARGETS)
    if unknown:
        parser.error(f"unknown targets {sorted(unknown)}; targets are {', '.join(targets.TARGETS)}")
    args.artifacts.mkdir(parents=True, exist_ok=True)
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    results = []
    for name in names:
        print(f"[fuzz] {name}: {args.seconds} s", file=sys.stderr, flush=True)
        results.append(run_target(name, args.seconds, args.artifacts))
    text = markdown(results, args.seconds, started, machine)
    print(text)
    for r in results:
        if r.artifact:
            print(f"{r.target}: reproduce with `python -m tests.fuzz.targets {r.target} {r.artifact}`")
    if not any(r.finding for r in results) and not any(args.artifacts.iterdir()):
        shutil.rmtree(args.artifacts)
    if args.out is not None:
        write_section(args.out, text)
    return 1 if any(r.finding for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())

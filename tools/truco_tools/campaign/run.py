"""Run a campaign (:mod:`truco_tools.campaign`) and write its report, ``docs/reliability.md``."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import os
import platform
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from truco_tools.campaign import LONG, SHORT, Profile
from truco_tools.campaign.chaos import LoadResult, memory_growth, run_load
from truco_tools.campaign.fuzz import FuzzResult, run_fuzz


@dataclass
class Report:
    profile: Profile
    loads: list[LoadResult]
    fuzz: list[FuzzResult]
    seconds: float
    started: str
    machine: str

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.loads) and all(not f.bad and not f.changed for f in self.fuzz)

    def markdown(self) -> str:
        p = self.profile
        out = [
            f"## Campaign `{p.name}`: {'PASSED' if self.ok else 'FAILED'}",
            "",
            f"Run {self.started} on {self.machine}, {self.seconds:.0f} s in all, with "
            f"`truco campaign --{p.name}` (loopback only; {p.workers} `truco serve` workers, "
            f"{p.concurrency} matches at once, one `redis-server` with an append-only file).",
            "",
            "| phase | seconds | matches finished | actions acknowledged (checked) | faults | lost | doubled "
            "| unfinished | unreported gaps | duplicates | INTERNAL/UNKNOWN |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in self.loads:
            s = r.stats
            faults = ", ".join(f"{n} {k}" for k, n in sorted(r.faults.items())) or "none"
            out.append(
                f"| {r.phase} | {r.seconds:g} | {s.matches_finished} | {s.actions} ({r.checked_actions}) "
                f"| {faults} | {len(r.lost)} | {len(r.doubled)} | {len(r.unfinished)} "
                f"| {len(s.unreported_gaps)} | {len(s.duplicates)} | {r.internal} |"
            )
        out += ["", "Fault names: `kill` a worker SIGKILLed and started again; `restart` Redis stopped "
                "(SIGTERM) and started on its append-only file; `pause` Redis SIGSTOPped for "
                f"{p.pause_seconds:g} s.", ""]  # fmt: skip
        for r in self.loads:
            g = memory_growth(r.samples)
            if g:
                out.append(
                    f"- {r.phase} memory (mean of the first and last fifth after a 20 % warm-up, "
                    f"{len(r.samples)} samples a second apart): largest worker RSS "
                    f"{g['worker_rss_mb'][0]} -> "
                    f"{g['worker_rss_mb'][1]} MB (x{g['worker_ratio']}), Redis `used_memory` "
                    f"{g['redis_used_mb'][0]} -> {g['redis_used_mb'][1]} MB (x{g['redis_ratio']}); "
                    f"{r.stats.actions / r.seconds:.0f} actions/s."
                )
            s = r.stats
            out.append(f"- {r.phase} retries: {dict(s.retries)}; streams broken {dict(s.stream_breaks)}.")
        out += ["", "| fuzz | inputs | INTERNAL/UNKNOWN or 5xx | state changed by a rejected input "
                "| answers |", "|---|---|---|---|---|"]  # fmt: skip
        for f in self.fuzz:
            answers = ", ".join(f"{k} {n}" for k, n in sorted(f.codes.items()))
            out.append(f"| {f.transport} | {f.inputs} | {len(f.bad)} | {len(f.changed)} | {answers} |")
        problems = [x for r in self.loads for x in r.lost + r.doubled + r.unfinished]
        problems += [x for f in self.fuzz for x in f.bad + f.changed]
        if problems:
            out += ["", "First problems:", "", *[f"- `{x[:300]}`" for x in problems[:10]]]
        return "\n".join(out) + "\n"


async def campaign(profile: Profile) -> Report:
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"
    machine += f", Python {platform.python_version()}"
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="truco-campaign-") as tmp:
        loads = [await run_load(profile, Path(tmp), chaos=chaos) for chaos in (False, True)]
    fuzz = await run_fuzz(profile.fuzz_inputs)
    return Report(profile, loads, fuzz, time.monotonic() - t0, started, machine)


MARKER = "<!-- campaign:{name} -->"


def write_report(path: Path, report: Report) -> None:
    """Replace the profile's section of ``path`` (between its markers), keeping the rest."""
    text = path.read_text() if path.exists() else ""
    begin, end = MARKER.format(name=report.profile.name), MARKER.format(name=report.profile.name + ":end")
    section = f"{begin}\n{report.markdown()}{end}"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + section + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + ("\n\n" if text else "") + section + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="truco campaign", description="load, chaos and fuzz on loopback")
    add_arguments(parser)
    return command(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    form = parser.add_mutually_exclusive_group()
    store = {"action": "store_const", "dest": "profile"}
    form.add_argument("--short", const=SHORT, help="about 1 minute (CI)", **store)  # type: ignore[arg-type]
    form.add_argument("--long", const=LONG, help="about 16 minutes", **store)  # type: ignore[arg-type]
    parser.add_argument("--out", type=Path, help="rewrite the form's section of this report")


def command(args: argparse.Namespace) -> int:
    logging.disable(logging.WARNING)
    report = asyncio.run(campaign(args.profile or SHORT))
    print(report.markdown())
    if args.out is not None:
        write_report(args.out, report)
    return 0 if report.ok else 1

"""Run a campaign (:mod:`truco_tools.campaign`) and write its report, ``docs/reliability.md``."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import logging
import os
import platform
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from truco_server.core.logging import configure_logging
from truco_tools.campaign import LONG, SHORT, Profile
from truco_tools.campaign.chaos import LoadResult, memory_growth, run_load
from truco_tools.campaign.fuzz import FuzzResult, run_fuzz, worker_env
from truco_tools.campaign.leaks import LATE_AT, LeakResult, run_leaks

PHASES = ("load", "fuzz", "leaks")


@dataclass
class Report:
    profile: Profile
    loads: list[LoadResult]
    fuzz: list[FuzzResult]
    leaks: LeakResult
    seconds: float
    started: str
    machine: str
    phases: tuple[str, ...] = PHASES
    overrides: str = ""
    """The command line's overrides of the form (e.g. `` --soak-seconds 240``)."""

    @property
    def section(self) -> str:
        """The report section it writes: the form, with the phases when not all ran."""
        name = self.profile.name
        return name if self.phases == PHASES else f"{name}:{'+'.join(self.phases)}"

    @property
    def ok(self) -> bool:
        fuzz_ok = all(not f.bad and not f.changed for f in self.fuzz)
        leaks_ok = not self.leaks.leaks and not self.leaks.errors
        return all(r.ok for r in self.loads) and fuzz_ok and leaks_ok

    def _load_lines(self) -> list[str]:
        p = self.profile
        out = [
            "",
            f"{p.workers} `truco serve` workers, {p.concurrency} matches at once, one `redis-server` "
            "with an append-only file.",
            "",
            "| phase | seconds | matches finished | actions acknowledged (checked) | faults | lost | doubled "
            "| unfinished | unreported gaps | duplicates | INTERNAL/UNKNOWN | lost deal served again |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in self.loads:
            s = r.stats
            faults = ", ".join(f"{n} {k}" for k, n in sorted(r.faults.items())) or "none"
            out.append(
                f"| {r.phase} | {r.seconds:g} | {s.matches_finished} | {s.actions} ({r.checked_actions}) "
                f"| {faults} | {len(r.lost)} | {len(r.doubled)} | {len(r.unfinished)} "
                f"| {len(s.unreported_gaps)} | {len(s.duplicates)} | {r.internal} "
                f"| {len(r.same_deal_again)} |"
            )
        out += ["", "Fault names: `kill` a worker SIGKILLed and started again; `restart` Redis stopped "
                "(SIGTERM) and started on its append-only file; `pause` Redis SIGSTOPped for "
                f"{p.pause_seconds:g} s; `loss` Redis SIGKILLed and started with its files removed "
                "(every match gone).", ""]  # fmt: skip
        for r in self.loads:
            g = memory_growth(r.samples)
            if g:
                out.append(
                    f"- {r.phase} memory (mean of the first and last fifth after a 20 % warm-up, "
                    f"{len(r.samples)} samples a second apart): largest worker RSS "
                    f"{g['worker_rss_mb'][0]} -> {g['worker_rss_mb'][1]} MB (x{g['worker_ratio']}), "
                    f"Redis `used_memory` {g['redis_used_mb'][0]} -> {g['redis_used_mb'][1]} MB "
                    f"(x{g['redis_ratio']}); by fifth, worker "
                    f"{', '.join(map(str, g['worker_fifths_mb']))} MB, Redis "
                    f"{', '.join(map(str, g['redis_fifths_mb']))} MB; "
                    f"{r.stats.actions / r.seconds:.0f} actions/s (by fifth "
                    f"{', '.join(map(str, g['actions_per_s_fifths']))}: more matches in play or "
                    "just ended hold more memory)."
                )
            s = r.stats
            out.append(f"- {r.phase} retries: {dict(s.retries)}; streams broken {dict(s.stream_breaks)}.")
            if r.faults:
                out.append(f"- {r.phase}: {r.idle_faults} faults injected while no match was in play.")
            if s.matches_recreated:
                out.append(
                    f"- {r.phase}: {s.matches_recreated} matches lost whole and created again with their "
                    f"request id (a new incarnation, a new deal commitment: "
                    f"{len(r.same_deal_again)} got the lost one's); {r.set_aside} acknowledged actions "
                    "of the lost incarnations set aside, not checked (the data loss lost them)."
                )
            out.append(
                f"- {r.phase} operator events: {r.events_checked} finished matches created after "
                f"the last data loss, {len(r.events_missing)} of them without their `match.created` "
                "or `match.ended` in the operator's event stream."
            )
            if r.checked_after_loss:
                out.append(
                    f"- {r.phase}: {r.checked_after_loss} matches had actions sent before a data "
                    "loss that may have taken their records (those acknowledgements are set aside "
                    "too, whenever their answer came; the ones sent after the last loss are checked)."
                )
        return out

    @property
    def _only(self) -> str:
        return "" if self.phases == PHASES else " --only " + ",".join(self.phases)

    def markdown(self) -> str:
        p = self.profile
        out = [
            f"## Campaign `{self.section}`: {'PASSED' if self.ok else 'FAILED'}",
            "",
            f"Run {self.started} on {self.machine}, {self.seconds:.0f} s in all, with "
            f"`truco campaign --{p.name}{self._only}{self.overrides}` (loopback only).",
        ]
        if self.loads:
            out += self._load_lines()
        if self.fuzz:
            out += ["", "| fuzz | inputs | INTERNAL/UNKNOWN or 5xx | state changed by a rejected input "
                    "| answers |", "|---|---|---|---|---|"]  # fmt: skip
            for f in self.fuzz:
                answers = ", ".join(f"{k} {n}" for k, n in sorted(f.codes.items()))
                if f.messages:  # the WebSocket connections': their ends above, their messages here
                    answers += "; messages: " + ", ".join(f"{k} {n}" for k, n in sorted(f.messages.items()))
                out.append(f"| {f.transport} | {f.inputs} | {len(f.bad)} | {len(f.changed)} | {answers} |")
        lk = self.leaks
        if "leaks" in self.phases:
            out += [
                "",
                f"Leak oracle: {lk.matches} whole random matches of {len(lk.presets)} presets (every "
                f"table size in turn; {lk.actions} actions, {lk.hands} hands, {lk.special_hands} of "
                f"them hands of eleven or iron hands), each seat and a spectator on its own stream, "
                f"and in each match one viewer streaming again from version 0 after {LATE_AT} "
                f"actions ({lk.late_streams}, served from the rebuilt record): {lk.messages} "
                f"messages checked against the server's state and stored events, "
                f"**{len(lk.leaks)} leaks**, {len(lk.errors)} matches that failed to play to their end.",
                "",
                f"Streams reopened from their last version when their connection went (the worker's "
                f"maximum connection age): {_counts(lk.reopened)}; actions refused because the match "
                f"had moved past the player's observation (read again, play went on): {_counts(lk.refused)}.",
            ]
        problems = [x for r in self.loads for x in r.lost + r.doubled + r.unfinished]
        problems += [x for r in self.loads for x in r.same_deal_again + r.events_missing]
        problems += lk.leaks + lk.errors
        problems += [x for f in self.fuzz for x in f.bad + f.changed]
        if problems:
            out += ["", "First problems:", "", *[f"- `{x[:300]}`" for x in problems[:10]]]
        return "\n".join(out) + "\n"


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(counts.items())) or "none"


def _progress(lk: LeakResult) -> None:
    """A line on stderr now and then (stdout is the report)."""
    print(f"leaks: {lk.matches} matches, {lk.messages} messages, {len(lk.leaks)} leaks, "
          f"{len(lk.errors)} errors", file=sys.stderr, flush=True)  # fmt: skip


async def campaign(profile: Profile, phases: tuple[str, ...] = PHASES) -> Report:
    """Run ``phases`` of the campaign (all by default)."""
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"
    machine += f", Python {platform.python_version()}"
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="truco-campaign-") as tmp:
        chaos_too = (False, True) if "load" in phases else ()
        loads = [await run_load(profile, Path(tmp), chaos=chaos) for chaos in chaos_too]
    fuzz: list[FuzzResult] = []
    leaks = LeakResult()
    async with worker_env() as (redis_url, worker):
        if "fuzz" in phases:
            fuzz = await run_fuzz(redis_url, worker, profile.fuzz_inputs)
        if "leaks" in phases:
            leaks = await run_leaks(redis_url, worker.grpc_address, profile.leak_matches, progress=_progress)
    return Report(profile, loads, fuzz, leaks, time.monotonic() - t0, started, machine, phases)


MARKER = "<!-- campaign:{name} -->"


def write_report(path: Path, report: Report) -> None:
    """Replace the profile's section of ``path`` (between its markers), keeping the rest."""
    text = path.read_text() if path.exists() else ""
    begin, end = MARKER.format(name=report.section), MARKER.format(name=report.section + ":end")
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
    form.add_argument("--short", const=SHORT, help="about 4 minutes (CI)", **store)  # type: ignore[arg-type]
    form.add_argument("--long", const=LONG, help="about 2 hours on 2 loaded cores", **store)  # type: ignore[arg-type]
    parser.add_argument(
        "--only", type=lambda text: tuple(text.split(",")), default=PHASES, help="phases: load,fuzz,leaks"
    )
    parser.add_argument("--out", type=Path, help="rewrite the form's section of this report")
    parser.add_argument("--soak-seconds", type=float, help="override the form's soak time")
    parser.add_argument("--concurrency", type=int, help="override the form's matches played at once")


def command(args: argparse.Namespace) -> int:
    logging.disable(logging.WARNING)
    # the in-process worker's own log lines go to stderr: stdout is the report
    configure_logging("error", stream="stderr")
    unknown = set(args.only) - set(PHASES)
    if unknown:
        print(f"truco campaign: unknown phases {sorted(unknown)}; phases are {', '.join(PHASES)}")
        return 2
    profile = args.profile or SHORT
    overrides = ""
    if args.soak_seconds is not None:
        profile = dataclasses.replace(profile, soak_seconds=args.soak_seconds)
        overrides += f" --soak-seconds {args.soak_seconds:g}"
    if args.concurrency is not None:
        profile = dataclasses.replace(profile, concurrency=args.concurrency)
        overrides += f" --concurrency {args.concurrency}"
    report = asyncio.run(campaign(profile, tuple(p for p in PHASES if p in args.only)))
    report.overrides = overrides
    print(report.markdown())
    if args.out is not None:
        write_report(args.out, report)
    return 0 if report.ok else 1

"""The operator feed as the league campaign reads it: a follower on its own thread, resumed
from its last cursor after every cut, and what the feed says of one league.

:class:`Feed` follows ``StreamOperatorEvents`` from the start of the stream (cursor ``0-0``)
on one worker, and on any failure (a worker killed, Redis restarted) reconnects to the next
worker with the cursor of the last event it received: the feed's own resume mechanism. It
keeps every delivery of the league events and of the matches' terminal events, as received.

:func:`league_sequence` checks the league events (each id once, ``<league>:e1`` upwards with no
gap, in order, no event twice under two ids, ``league.started`` first and ``league.finished``
last, each ``entrant.forfeited`` within its round) and :func:`round_times` derives, from the
times the server recorded, each round's pairing time and wall time.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from truco_contract.pb import league_service_pb2 as LPB
from truco_contract.pb import operator_service_pb2 as OPS
from truco_contract.pb import operator_service_pb2_grpc as OPG

LEAGUE_TYPES = (
    "league.started", "round.paired", "entrant.forfeited", "entrant.withdrawn",
    "result.corrected", "league.paused", "league.resumed", "league.finished",
)  # fmt: skip
RESULT_TYPES = ("match.ended", "match.aborted", "match.cancelled")
"""A match's terminal events: its result is in (or it was called off)."""
FEED_TYPES = (*LEAGUE_TYPES, "match.created", *RESULT_TYPES)


@dataclass(frozen=True)
class FeedEvent:
    """One delivery of the feed (what the campaign keeps of an ``OperatorEvent``)."""

    id: str
    type: str
    time: float
    match_id: str
    labels: dict[str, str]

    @property
    def number(self) -> int:
        """``n`` of a league event's id ``<league>:e<n>`` (0 for any other)."""
        tail = self.id.rsplit(":", 1)[-1]
        return int(tail[1:]) if tail.startswith("e") and tail[1:].isdigit() else 0

    @property
    def round(self) -> int:
        return int(self.labels.get("round", "0") or 0)


@dataclass
class Feed:
    """Follows the operator feed from its start on a thread, through cuts (see the module
    docstring). ``addresses`` are the workers' gRPC addresses, tried in turn."""

    addresses: Sequence[str]
    deliveries: list[FeedEvent] = field(default_factory=list)
    cursor: str = "0-0"
    connects: int = 0
    cuts: Counter[str] = field(default_factory=Counter)
    """Why a stream ended before it was stopped, by status code."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _call: Any = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="league-feed", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        call = self._call
        if call is not None:
            call.cancel()
        if self._thread is not None:
            self._thread.join(30)

    def of(self, league_id: str) -> list[FeedEvent]:
        """The deliveries so far that concern ``league_id``, in the order received."""
        with self._lock:
            return [e for e in self.deliveries if e.labels.get("league") == league_id]

    def _run(self) -> None:
        attempt = 0
        while not self._stop.is_set():
            address = self.addresses[attempt % len(self.addresses)]
            attempt += 1
            with grpc.insecure_channel(address) as channel:
                request = OPS.StreamOperatorEventsRequest(from_cursor=self.cursor, event_types=FEED_TYPES)
                self._call = OPG.OperatorServiceStub(channel).StreamOperatorEvents(request)
                self.connects += 1
                try:
                    for msg in self._call:
                        if msg.HasField("event"):
                            self._keep(msg.event)
                except grpc.RpcError as exc:
                    if not self._stop.is_set():
                        self.cuts[exc.code().name] += 1
                finally:
                    self._call = None
            if not self._stop.is_set():
                time.sleep(0.2)

    def _keep(self, ev: Any) -> None:
        kept = FeedEvent(ev.id, ev.type, ev.time.seconds + ev.time.nanos / 1e9, ev.match_id, dict(ev.labels))
        with self._lock:
            self.deliveries.append(kept)
            self.cursor = ev.cursor


@dataclass
class LeagueSequence:
    """What :func:`league_sequence` found."""

    events: list[FeedEvent]
    """Each league event once (its first delivery), in the order received."""
    redelivered: int
    """Deliveries of an id already received (the feed is at least once: not a failure)."""
    problems: list[str]


def _identity(e: FeedEvent) -> tuple[str, ...]:
    """What makes a league event the same event whatever its id."""
    if e.type == "entrant.forfeited":
        return (e.type, e.labels.get("round", ""), e.labels.get("table", ""), e.labels.get("entrant", ""))
    if e.type in ("league.started", "league.finished"):
        return (e.type,)
    if e.type == "round.paired":
        return (e.type, e.labels.get("round", ""))
    return (e.type, e.id)


def league_sequence(
    deliveries: Sequence[FeedEvent], league_id: str, forfeits_in_round: bool = True
) -> LeagueSequence:
    """Checks the league's own events (see the module docstring). ``forfeits_in_round`` False
    (an arena, whose waves overlap) leaves out "each ``entrant.forfeited`` within its round"."""
    mine = [e for e in deliveries if e.type in LEAGUE_TYPES and e.labels.get("league") == league_id]
    first: dict[str, FeedEvent] = {}
    for e in mine:
        first.setdefault(e.id, e)
    events = list(first.values())
    problems: list[str] = []
    numbers = [e.number for e in events]
    if sorted(numbers) != list(range(1, len(numbers) + 1)):
        missing = sorted(set(range(1, max(numbers, default=0) + 1)) - set(numbers))
        problems.append(f"league event ids not e1..e{len(numbers)}: missing {missing[:10]}")
    if numbers != sorted(numbers):
        problems.append("league events out of order: " + ", ".join(f"e{n}" for n in numbers[:40]))
    twice = [k for k, n in Counter(_identity(e) for e in events).items() if n > 1]
    if twice:
        problems.append(f"league events twice under two ids: {twice[:5]}")
    kinds = [e.type for e in events]
    if not kinds or kinds[0] != "league.started":
        problems.append(f"the first league event is {kinds[:1]}, not league.started")
    if not kinds or kinds[-1] != "league.finished" or kinds.count("league.finished") != 1:
        problems.append(f"league.finished is not last and once: {kinds[-3:]}")
    current = 0
    for e in events:
        if e.type == "round.paired":
            if e.round != current + 1:
                problems.append(f"round.paired {e.round} after round {current}")
            current = e.round
        elif forfeits_in_round and e.type == "entrant.forfeited" and e.round != current:
            problems.append(f"entrant.forfeited of round {e.round} during round {current}")
    return LeagueSequence(events, len(mine) - len(events), problems)


@dataclass(frozen=True)
class RoundTimes:
    """One round as the server's times tell it (seconds)."""

    round: int
    matches: int
    pairing: float
    """From the last result of the round before (round 1: from ``league.started``) to this
    round's ``round.paired`` (whose time the job takes as its pass begins to pair)."""
    wall: float
    """From ``round.paired`` to the round's last result."""
    half: float = 0.0
    """From ``round.paired`` to the result that completed half the round's matches."""
    created: float = 0.0
    """From the same start as :attr:`pairing` to the round's last ``match.created``: the
    round paired, stored and every match of it made."""


def round_times(
    deliveries: Sequence[FeedEvent], events: Sequence[FeedEvent], league_id: str
) -> list[RoundTimes]:
    """Per round, from ``events`` (the league's, once each) and the matches' terminal events."""
    paired = {e.round: e for e in events if e.type == "round.paired"}
    started = next((e.time for e in events if e.type == "league.started"), 0.0)
    ends: dict[int, dict[str, float]] = {}
    made: dict[int, float] = {}
    for e in deliveries:
        if e.labels.get("league") != league_id:
            continue
        if e.type in RESULT_TYPES:
            ends.setdefault(e.round, {}).setdefault(e.match_id, e.time)
        elif e.type == "match.created":
            made[e.round] = max(made.get(e.round, 0.0), e.time)
    last = {r: max(times.values()) for r, times in ends.items()}
    out = []
    for r in sorted(paired):
        at = paired[r].time
        before = started if r == 1 else last.get(r - 1, 0.0)
        times = sorted(ends.get(r, {}).values())
        half = times[(len(times) - 1) // 2] - at if times else 0.0
        created = made[r] - before if r in made else 0.0
        out.append(RoundTimes(r, len(times), at - before, last.get(r, at) - at, half, created))
    return out


def finish_time(events: Sequence[FeedEvent], deliveries: Sequence[FeedEvent], league_id: str) -> float:
    """From the last result of the last round to ``league.finished`` (0 when not finished)."""
    finished = next((e.time for e in events if e.type == "league.finished"), 0.0)
    results = [e.time for e in deliveries if e.type in RESULT_TYPES and e.labels.get("league") == league_id]
    return finished - max(results) if finished and results else 0.0


def unended(deliveries: Sequence[FeedEvent]) -> set[str]:
    """Matches created on the feed without a terminal event on it yet."""
    ended = {e.match_id for e in deliveries if e.type in RESULT_TYPES}
    return {e.match_id for e in deliveries if e.type == "match.created"} - ended


def forfeits_untold(pairings: list[LPB.LeaguePairing], events: list[FeedEvent]) -> list[str]:
    """Each side that lost a pairing without playing it must have had its ``entrant.forfeited``
    event, and nobody else: the (round, entrant) found on one side only."""
    told = {(e.round, e.labels.get("entrant", "")) for e in events if e.type == "entrant.forfeited"}
    lost = {
        (p.round, side)
        for p in pairings
        if p.second and p.HasField("result") and p.result.forfeit
        for side in (p.first, p.second)
        if side != p.result.winner
    }
    return [f"round {n}: {e}" for n, e in sorted(told ^ lost)]

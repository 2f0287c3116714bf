"""A matchmaking campaign: many tickets in a 2-seat and a 4-seat pool (with parties of two),
sent to several workers on one Redis while one worker is SIGKILLed and started again; then
every ticket, match and seat is checked, and the time to match is printed.

    python -m truco_tools.matchmaking_campaign --tickets 10000      # docs/benchmarks.md

What is checked (each must be 0 for the run to pass, exit status 1 otherwise):

* a ticket *lost*: sent (answered, or retried with the same ``request_id`` until answered)
  but not matched when the run ends, while its pool could still seat it;
* a ticket *doubled*: two ticket ids for one ``request_id``, or a ticket whose players are
  not exactly the players of its match's seats it was given;
* a player *in two matches* (every player here queues once), or a match's seat whose player
  came from no ticket of that match, or a match of the operator that no ticket points to (a
  table created twice);
* a party *split*: its two players on different teams.

The *time to match* is a ticket's ``match_time`` minus its ``create_time``; the *formation
time* of a table is its match's time minus the ``create_time`` of its newest ticket (from the
moment the table could be formed to its match made and its holders told), both as the
server recorded them. Ticket sends are spread over the workers; a send that fails because
its worker died is sent again, with the same request id, to another worker.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import duration_pb2

from truco_contract.pb import match_pb2, match_service_pb2, match_service_pb2_grpc
from truco_contract.pb import matchmaking_service_pb2 as MM
from truco_contract.pb import matchmaking_service_pb2_grpc as MMG
from truco_tools.cluster_load import RETRY_CODES, WorkerProcess, start_workers

POOLS = {"duo": 2, "quad": 4}
SETTINGS = {"TRUCO_SCHEDULER_TICK_SECONDS": "0.05"}


@dataclass(frozen=True)
class Planned:
    """One ticket to send: its pool, request id and players (two for a party)."""

    pool: str
    request_id: str
    players: tuple[str, ...]


@dataclass
class Report:
    """What the campaign saw; :meth:`failures` must be empty."""

    sent: int = 0
    retried_sends: int = 0
    duplicate_sends: int = 0
    matched: int = 0
    matches: int = 0
    parties: int = 0
    lost: list[str] = field(default_factory=list)
    doubled: list[str] = field(default_factory=list)
    players_in_two: list[str] = field(default_factory=list)
    strangers: list[str] = field(default_factory=list)
    orphan_matches: list[str] = field(default_factory=list)
    split_parties: list[str] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)
    formations: list[float] = field(default_factory=list)
    kills: int = 0
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        checks = {
            "lost tickets": self.lost,
            "doubled tickets": self.doubled,
            "players in two matches": self.players_in_two,
            "seats from no ticket": self.strangers,
            "matches no ticket points to": self.orphan_matches,
            "parties split": self.split_parties,
        }
        return {k: len(v) for k, v in checks.items()}

    def failures(self) -> dict[str, int]:
        return {k: n for k, n in self.counts().items() if n}

    def summary(self) -> str:
        lines = [
            f"tickets sent {self.sent} (sends retried after a worker died: {self.retried_sends}, "
            f"sent twice on purpose: {self.duplicate_sends}), parties {self.parties}, "
            f"worker kills {self.kills}, {self.seconds:.1f} s",
            f"tickets matched {self.matched}, matches {self.matches}",
            " | ".join(f"{name} {n}" for name, n in self.counts().items()),
            "time to match (s): " + _quantiles(self.waits),
            "formation (s):     " + _quantiles(self.formations),
            "time to match histogram: " + _histogram(self.waits),
        ]
        return "\n".join(lines)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _quantiles(values: list[float]) -> str:
    return "  ".join(
        f"{name} {_quantile(values, q):.3f}"
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))
    )


def _histogram(values: list[float]) -> str:
    edges = (0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)
    counts = Counter(next((f"<={e}" for e in edges if v <= e), f">{edges[-1]}") for v in values)
    return ", ".join(f"{k}: {counts[k]}" for k in [*(f"<={e}" for e in edges), f">{edges[-1]}"] if counts[k])


def plan(tickets: int, party_share: float, seed: int) -> list[Planned]:
    """Half the tickets to ``duo``, half to ``quad`` (``party_share`` of those parties of two),
    counts chosen so that every ticket can be seated; in a random order of arrival."""
    rng = random.Random(seed)
    duo = tickets // 2 - (tickets // 2) % 2
    quad = tickets - duo
    parties = int(quad * party_share)
    solos = quad - parties
    solos -= solos % 2  # 2 * parties + solos must fill whole tables of four
    while (2 * parties + solos) % 4:
        solos -= 2
    out = [Planned("duo", f"d{i}", (f"d{i}",)) for i in range(duo)]
    out += [Planned("quad", f"q{i}", (f"q{i}",)) for i in range(solos)]
    out += [Planned("quad", f"p{i}", (f"p{i}a", f"p{i}b")) for i in range(parties)]
    rng.shuffle(out)
    return out


class Campaign:
    """Sends the planned tickets through ``workers`` and checks what became of them."""

    def __init__(self, workers: list[WorkerProcess], *, concurrency: int, seed: int) -> None:
        self.workers = workers
        self.concurrency = concurrency
        self.rng = random.Random(seed)
        self.channels: dict[str, grpc.aio.Channel] = {}
        self.report = Report()
        self.tickets: dict[str, MM.Ticket] = {}  # request id -> the ticket as created
        self.alive = asyncio.Event()
        self.alive.set()

    def _stub(self, avoid: str | None = None) -> tuple[str, MMG.MatchmakingServiceStub]:
        choices = [w.address for w in self.workers if w.address != avoid] or [self.workers[0].address]
        address = self.rng.choice(choices)
        if address not in self.channels:
            self.channels[address] = grpc.aio.insecure_channel(address)
        return address, MMG.MatchmakingServiceStub(self.channels[address])

    async def close(self) -> None:
        for ch in self.channels.values():
            await ch.close()

    async def call(self, method: str, request: Any, *, count_retry: bool = False) -> Any:
        """``method`` on a random worker; on a failure a worker's death causes, the same
        request again on another (every call here is idempotent)."""
        avoid = None
        for attempt in range(200):
            address, stub = self._stub(avoid)
            try:
                return await getattr(stub, method)(request, timeout=20)
            except grpc.aio.AioRpcError as exc:
                if exc.code() not in RETRY_CODES:
                    raise
                if count_retry and attempt == 0:
                    self.report.retried_sends += 1
                avoid = address
                await asyncio.sleep(min(0.05 * (attempt + 1), 0.5))
        raise RuntimeError(f"{method} kept failing")

    async def create_pools(self, ttl_seconds: int) -> None:
        for pool_id, players in POOLS.items():
            pool = MM.Pool(
                pool_id=pool_id,
                rules=match_pb2.RuleSet(preset="paulista"),
                players=players,
                ticket_ttl=duration_pb2.Duration(seconds=ttl_seconds),
            )
            await self.call("CreatePool", MM.CreatePoolRequest(pool=pool))

    async def send(self, planned: list[Planned], kill_at: int, duplicate_share: float) -> None:
        queue: asyncio.Queue[Planned] = asyncio.Queue()
        for p in planned:
            queue.put_nowait(p)
        sent = 0
        killed = asyncio.Event()

        async def kill_and_restart() -> None:
            victim = self.workers[-1]
            victim.kill()
            self.report.kills += 1
            await asyncio.sleep(0.5)
            victim.start()
            await asyncio.to_thread(victim.wait_ready, 120.0)

        restart: asyncio.Task[None] | None = None

        async def one_sender() -> None:
            nonlocal sent, restart
            while not queue.empty():
                p = queue.get_nowait()
                req = MM.CreateTicketRequest(
                    pool_id=p.pool,
                    request_id=p.request_id,
                    players=[MM.TicketPlayer(player_id=x, display_name=x) for x in p.players],
                )
                got = await self.call("CreateTicket", req, count_retry=True)
                self.tickets[p.request_id] = got.ticket
                sent += 1
                if sent >= kill_at and not killed.is_set():
                    killed.set()
                    restart = asyncio.create_task(kill_and_restart())
                if self.rng.random() < duplicate_share:  # a client's retry: the same ticket back
                    self.report.duplicate_sends += 1
                    again = await self.call("CreateTicket", req)
                    if again.ticket.ticket_id != got.ticket.ticket_id:
                        self.report.doubled.append(p.request_id)

        await asyncio.gather(*(one_sender() for _ in range(self.concurrency)))
        if restart is not None:
            await restart
        self.report.sent = sent
        self.report.parties = sum(1 for p in planned if len(p.players) > 1)

    async def settle(self, planned: list[Planned], deadline: float) -> dict[str, MM.Ticket]:
        """Reads every ticket until all are matched (or ``deadline``, ``time.monotonic()``)."""
        final: dict[str, MM.Ticket] = {}
        outstanding = [p for p in planned if p.request_id in self.tickets]
        sem = asyncio.Semaphore(self.concurrency)

        async def read(p: Planned) -> None:
            t = self.tickets[p.request_id]
            async with sem:
                got = await self.call("GetTicket", MM.GetTicketRequest(pool_id=p.pool, ticket_id=t.ticket_id))
            final[p.request_id] = got.ticket

        while outstanding:
            await asyncio.gather(*(read(p) for p in outstanding))
            outstanding = [p for p in outstanding if final[p.request_id].state != MM.TICKET_STATE_MATCHED]
            if not outstanding or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        return final

    async def list_matches(self) -> dict[str, match_pb2.Match]:
        out: dict[str, match_pb2.Match] = {}
        token = ""
        address = self.workers[0].address
        stub = match_service_pb2_grpc.MatchServiceStub(self.channels.get(address) or self._channel(address))
        while True:
            page = await stub.ListMatches(
                match_service_pb2.ListMatchesRequest(page_size=500, page_token=token), timeout=30
            )
            for m in page.matches:
                out[m.match_id] = m
            token = page.next_page_token
            if not token:
                return out

    def _channel(self, address: str) -> grpc.aio.Channel:
        self.channels[address] = grpc.aio.insecure_channel(address)
        return self.channels[address]

    def check(
        self, planned: list[Planned], final: dict[str, MM.Ticket], matches: dict[str, match_pb2.Match]
    ) -> None:
        r = self.report
        by_match: dict[str, list[tuple[Planned, MM.Ticket]]] = {}
        for p in planned:
            t = final.get(p.request_id)
            if t is None or t.state != MM.TICKET_STATE_MATCHED:
                r.lost.append(p.request_id)
                continue
            r.matched += 1
            by_match.setdefault(t.match_id, []).append((p, t))
            if sorted(s.player_id for s in t.seats) != sorted(p.players):
                r.doubled.append(p.request_id)
            r.waits.append(_ts(t.match_time) - _ts(t.create_time))
        r.matches = len(by_match)
        seen_player: dict[str, str] = {}
        for match_id, held in by_match.items():
            match = matches.get(match_id)
            ticket_players = {x for p, _ in held for x in p.players}
            if match is None:
                r.strangers.append(match_id)
                continue
            seats = {s.player_id: s for s in match.seats}
            if set(seats) != ticket_players or len(match.seats) != POOLS[held[0][0].pool]:
                r.strangers.append(match_id)
            for x in ticket_players:
                if seen_player.setdefault(x, match_id) != match_id:
                    r.players_in_two.append(x)
            for p, t in held:
                given = {s.player_id: s.seat for s in t.seats}
                if any(seats.get(x) is None or seats[x].seat != given.get(x) for x in p.players):
                    r.doubled.append(p.request_id)
                if len(p.players) > 1 and len({seats[x].team for x in p.players if x in seats}) != 1:
                    r.split_parties.append(p.request_id)
            newest = max(_ts(t.create_time) for _, t in held)
            r.formations.append(_ts(held[0][1].match_time) - newest)
        r.orphan_matches = sorted(set(matches) - set(by_match))


def _ts(t: Any) -> float:
    return float(t.seconds) + float(t.nanos) / 1e9


async def run(
    tickets: int,
    *,
    redis_url: str,
    log_dir: Path,
    workers: int = 2,
    party_share: float = 0.3,
    kill_fraction: float = 0.4,
    duplicate_share: float = 0.01,
    concurrency: int = 32,
    settle_seconds: float = 600.0,
    seed: int = 7,
) -> Report:
    """One campaign on ``redis_url`` (flushed by the caller); returns its report."""
    procs = start_workers(workers, redis_url, log_dir, settings=SETTINGS, ready_timeout=120.0)
    campaign = Campaign(procs, concurrency=concurrency, seed=seed)
    started = time.monotonic()
    try:
        planned = plan(tickets, party_share, seed)
        await campaign.create_pools(ttl_seconds=24 * 3600)
        kill_at = int(len(planned) * kill_fraction) if kill_fraction > 0 else len(planned) + 1
        await campaign.send(planned, kill_at, duplicate_share)
        final = await campaign.settle(planned, time.monotonic() + settle_seconds)
        matches = await campaign.list_matches()
        campaign.check(planned, final, matches)
    finally:
        await campaign.close()
        for w in procs:
            w.stop()
    campaign.report.seconds = time.monotonic() - started
    return campaign.report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--tickets", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--party-share", type=float, default=0.3, help="of the 4-seat pool's tickets")
    ap.add_argument("--kill-at", type=float, default=0.4, help="fraction of tickets sent (0: no kill)")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--redis", help="a Redis URL to use (flushed!); default: a redis-server of its own")
    args = ap.parse_args(argv)
    from truco_tools.redis_proc import start_redis

    with tempfile.TemporaryDirectory(prefix="mm-campaign-") as tmp:
        log_dir = Path(tmp)
        redis_proc = None
        url = args.redis
        if url is None:
            (log_dir / "redis").mkdir()
            redis_proc = start_redis(workdir=log_dir / "redis")
            url = redis_proc.url
        try:
            report = asyncio.run(
                run(
                    args.tickets,
                    redis_url=url,
                    log_dir=log_dir,
                    workers=args.workers,
                    party_share=args.party_share,
                    kill_fraction=args.kill_at,
                    concurrency=args.concurrency,
                    seed=args.seed,
                )
            )
        finally:
            if redis_proc is not None:
                redis_proc.stop()
    print(report.summary())
    bad = report.failures()
    if bad:
        print("FAILED:", bad, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Matchmaking: who may sit at one table, and how the waiting tickets of a pool are formed
into tables. Pure: the server stores the tickets and commits each table atomically; what a
table is, and whether two tickets may share one, is decided here.

* A **pool** (:class:`PoolSpec`) is a match template (the rules, the lifecycle settings,
  rated or not) plus how to pair: an optional :class:`RatingWindow` and how long a ticket
  waits before it expires.
* A **ticket** names a player (the operator's player id) and optionally the partners he must
  sit with (a *party*: at most one team's worth of players, seated as partners), and
  properties to match on.
* Two tickets are **compatible** (:func:`compatible`) when they share no player, their
  properties agree on every key both give, and -- in a pool with a rating window -- their
  ratings differ by no more than the narrower of their two windows at that moment. A
  window starts at ``initial_width`` and widens by ``widen_per_second`` for every second its
  ticket has waited, up to ``max_width`` (0: without limit) (:meth:`RatingWindow.width`).
* :func:`form` makes tables from the waiting tickets, oldest first: each ticket in turn (if
  not yet seated) looks for the closest-rated compatible tickets, each compatible with every
  one already chosen, whose parties can be packed into whole teams; a full table is formed.
  Every pair of tickets at a table is compatible at the time of forming. In a pool of
  single-player tickets for two seats, no two tickets left waiting are compatible.
* **Bot fill** (:class:`BotFill`, optional): a ticket :func:`form` left waiting for the
  pool's ``after`` gets a table of its own, the server's bots in the other seats
  (:func:`fill`). Such a table is never rated.
"""

from __future__ import annotations

import base64
import bisect
import dataclasses
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import truco_engine as te
from truco_match.create import (
    BOT_LEVELS,
    DEFAULT_TAKEOVER_LEVEL,
    PLAYER_ID,
    MatchSpec,
    SeatSpec,
    SpecError,
    check,
    family_of,
)
from truco_match.operator_events import TicketSeat

POOL_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
"""What a pool id may be: 1 to 40 letters, digits, ``_`` and ``-``."""
TICKET_ID = re.compile(r"^t[0-9a-f]{20}$")
MAX_PROPERTIES = 16
MAX_PROPERTY_KEY = 32
MAX_PROPERTY_VALUE = 64
MAX_DISPLAY_NAME = 64
MAX_TICKET_TTL_MS = 14 * 24 * 3600 * 1000
DEFAULT_TICKET_TTL_MS = 10 * 60 * 1000
TICKET_TOKEN_PREFIX = "tk1"


class TicketState(StrEnum):
    """Where a ticket is (``truco.v1.TicketState``)."""

    WAITING = "waiting"
    FORMING = "forming"
    """Its table is formed and its match being created (shown as waiting)."""
    MATCHED = "matched"
    CANCELLED = "cancelled"
    EXPIRED = "expired"

    @property
    def over(self) -> bool:
        return self in (TicketState.MATCHED, TicketState.CANCELLED, TicketState.EXPIRED)


@dataclass(frozen=True, slots=True)
class RatingWindow:
    """How far apart two tickets' ratings may be (OpenSkill ``mu`` points, the players'
    mean for a party), as a function of how long each has waited."""

    initial_width: float = 5.0
    widen_per_second: float = 0.5
    max_width: float = 0.0
    """The widest the window gets; 0: it keeps widening."""

    def width(self, waited_seconds: float) -> float:
        """The window of a ticket that has waited ``waited_seconds`` (never negative):
        ``initial_width + widen_per_second * waited``, at most ``max_width`` when set."""
        wide = self.initial_width + self.widen_per_second * max(0.0, waited_seconds)
        return min(wide, self.max_width) if self.max_width > 0 else wide

    def problems(self) -> list[tuple[str, str]]:
        out = []
        for name in ("initial_width", "widen_per_second", "max_width"):
            value = getattr(self, name)
            if not 0 <= value <= 1e6 or value != value:
                out.append((f"rating_window.{name}", "between 0 and 1000000"))
        if self.max_width and self.max_width < self.initial_width:
            out.append(("rating_window.max_width", "at least initial_width (or 0: no limit)"))
        return out


@dataclass(frozen=True, slots=True)
class BotFill:
    """A ticket that has waited ``after_ms`` with no table formed gets a table of its own:
    its party as one team, the server's bots (at ``level``) in every other seat. A party
    smaller than a team is filled only when the pool lets bots sit as its partners
    (``partners``); otherwise it waits for people."""

    after_ms: int
    level: int = DEFAULT_TAKEOVER_LEVEL
    partners: bool = False

    def problems(self, ticket_ttl_ms: int) -> list[tuple[str, str]]:
        out = []
        if not 1000 <= self.after_ms < ticket_ttl_ms:
            out.append(("bot_fill_after", "at least 1 second, and less than ticket_ttl"))
        if self.level not in BOT_LEVELS:
            out.append(("bot_fill_level", "a bot level, 1 to 6 (or unset: 3)"))
        return out


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """A pool as its operator defines it."""

    pool_id: str
    match: MatchSpec
    """The template of its matches (rules, lifecycle settings, labels, rated); seats none."""
    window: RatingWindow | None = None
    ticket_ttl_ms: int = DEFAULT_TICKET_TTL_MS
    bot_fill: BotFill | None = None
    """Fill a table with the server's bots after a wait; ``None``: people only."""


@dataclass(frozen=True, slots=True)
class Pool:
    """A pool, checked: its spec and what follows from its rules."""

    spec: PoolSpec
    rules: te.RuleSet
    seat_teams: tuple[int, ...]
    """The team of each seat (the first hand's)."""

    @property
    def pool_id(self) -> str:
        return self.spec.pool_id

    @property
    def players(self) -> int:
        return self.rules.players

    @property
    def sides(self) -> int:
        return self.rules.sides

    @property
    def team_size(self) -> int:
        """The most players one ticket may bring (its party included)."""
        return self.rules.players // self.rules.sides

    @property
    def family(self) -> str:
        return family_of(self.rules)


def check_pool(spec: PoolSpec, default_idle_timeout: int) -> Pool:
    """The pool of ``spec``; :class:`~truco_match.create.SpecError` for the first thing wrong
    (the match template is checked as a match would be)."""
    if not POOL_ID.match(spec.pool_id):
        raise SpecError(
            "pool_id: 1 to 40 letters, digits, _ and -", [("pool_id", "1 to 40 of [A-Za-z0-9_-]")]
        )
    if spec.match.seats or spec.match.deck_orders or spec.match.seed is not None:
        raise SpecError(
            "a pool's matches are seated by the pool and dealt by the server",
            [("seats", "not in a pool")],
        )
    rules, _ = check(dataclasses.replace(spec.match, rated=False), default_idle_timeout)
    if spec.match.rated:  # checked as its matches will be: every seat with a player
        seated = tuple(SeatSpec(player_id=f"seat-{i}") for i in range(rules.players))
        check(dataclasses.replace(spec.match, seats=seated), default_idle_timeout)
    if rules.play_mode is te.PlayMode.CARANCHO and spec.match.rated:
        raise SpecError("carancho matches are not rated", [("settings.rated", "not for carancho")])
    problems = spec.window.problems() if spec.window is not None else []
    if not 1000 <= spec.ticket_ttl_ms <= MAX_TICKET_TTL_MS:
        problems.append(("ticket_ttl", "between 1 second and 14 days"))
    if spec.bot_fill is not None:
        problems += spec.bot_fill.problems(spec.ticket_ttl_ms)
    if problems:
        raise SpecError(f"invalid pool: {problems[0][0]}: {problems[0][1]}", problems)
    return Pool(spec, rules, te.seat_teams(te.new_match(rules)))


# ----------------------------------------------------------------------------- tickets
@dataclass(frozen=True, slots=True)
class TicketPlayer:
    player_id: str
    display_name: str = ""


@dataclass(frozen=True, slots=True)
class TicketSpec:
    """What a ticket asks for: its player first, then his party."""

    players: tuple[TicketPlayer, ...]
    properties: Mapping[str, str] = field(default_factory=dict)


def check_ticket(pool: Pool, spec: TicketSpec) -> None:
    """:class:`SpecError` for a ticket the pool cannot seat as asked."""
    n = len(spec.players)
    if not 1 <= n <= pool.team_size:
        most = "one player" if pool.team_size == 1 else f"1 to {pool.team_size} players (one team)"
        raise SpecError(f"a ticket of this pool brings {most}", [("players", most)])
    for i, p in enumerate(spec.players):
        if not PLAYER_ID.match(p.player_id):
            raise SpecError(
                f"players[{i}].player_id: 1 to 64 letters, digits and . _ : @ -",
                [(f"players[{i}].player_id", "1 to 64 letters, digits and . _ : @ -")],
            )
        if len(p.display_name) > MAX_DISPLAY_NAME:
            raise SpecError(
                "a display name is at most 64 characters", [(f"players[{i}].display_name", "too long")]
            )
    if len({p.player_id for p in spec.players}) != n:
        raise SpecError("a player appears twice in one ticket", [("players", "each player once")])
    props = spec.properties
    if len(props) > MAX_PROPERTIES or any(
        not k or len(k) > MAX_PROPERTY_KEY or len(v) > MAX_PROPERTY_VALUE for k, v in props.items()
    ):
        raise SpecError(
            f"at most {MAX_PROPERTIES} properties, keys of 1 to {MAX_PROPERTY_KEY} and values up to "
            f"{MAX_PROPERTY_VALUE} characters",
            [("properties", "too many or too long")],
        )


@dataclass(frozen=True, slots=True)
class Waiting:
    """A waiting ticket as :func:`form` sees it."""

    ticket_id: str
    players: tuple[str, ...]
    rating: float
    created: float
    """When it was made (seconds since the epoch)."""
    properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.players)


@dataclass(frozen=True, slots=True)
class Ticket:
    """A ticket as its holder and its operator see it (``truco.v1.Ticket``)."""

    ticket_id: str
    pool_id: str
    state: TicketState
    players: tuple[TicketPlayer, ...]
    properties: Mapping[str, str]
    rating: float
    created: float
    expires: float
    match_id: str = ""
    seats: tuple[TicketSeat, ...] = ()
    """When matched: each player's seat and its credential."""
    matched_at: float | None = None


def window_of(pool: Pool, ticket: Waiting, now: float) -> float | None:
    """The ticket's rating window at ``now`` (``None``: the pool has none)."""
    w = pool.spec.window
    return None if w is None else w.width(now - ticket.created)


def compatible(pool: Pool, a: Waiting, b: Waiting, now: float) -> bool:
    """Whether ``a`` and ``b`` may sit at one table at ``now`` (see the module docstring)."""
    if set(a.players) & set(b.players):
        return False
    if any(b.properties.get(k, v) != v for k, v in a.properties.items()):
        return False
    wa, wb = window_of(pool, a, now), window_of(pool, b, now)
    if wa is None or wb is None:
        return True
    return abs(a.rating - b.rating) <= min(wa, wb)


def pack(sizes: Sequence[int], teams: int, capacity: int) -> list[int] | None:
    """A team (0-based) for each party of ``sizes`` so that no team holds more than
    ``capacity`` players, or ``None`` when there is none (the largest parties placed first;
    at most a table's worth of parties, so the search is small)."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    load = [0] * teams
    placed = [0] * len(sizes)

    def place(k: int) -> bool:
        if k == len(order):
            return True
        i = order[k]
        tried: set[int] = set()
        for t in range(teams):
            if load[t] + sizes[i] > capacity or load[t] in tried:
                continue  # teams with the same load are alike
            tried.add(load[t])
            load[t] += sizes[i]
            placed[i] = t
            if place(k + 1):
                return True
            load[t] -= sizes[i]
        return False

    return placed if place(0) else None


@dataclass(frozen=True, slots=True)
class Table:
    """A formed table: its tickets and, per seat, the ticket and player sitting there."""

    tickets: tuple[Waiting, ...]
    seats: tuple[tuple[str, str], ...]
    """Per seat (0-based): ``(ticket_id, player_id)``; ``("", "")`` for a seat the server's
    bot plays (:class:`BotFill`)."""

    @property
    def bots(self) -> int:
        """The seats the server's bots play."""
        return sum(1 for t, _ in self.seats if not t)


def seat(pool: Pool, tickets: Sequence[Waiting]) -> Table:
    """Seat a full table: each party in one team, teams in seat order, players of a ticket
    in its order. Raises ``ValueError`` when the tickets do not fill the table in whole
    teams."""
    if sum(t.size for t in tickets) != pool.players:
        raise ValueError("the tickets do not fill the table")
    placed = pack([t.size for t in tickets], pool.sides, pool.team_size)
    if placed is None:
        raise ValueError("the parties cannot be seated in whole teams")
    free = {team: [s for s, t in enumerate(pool.seat_teams) if t == team] for team in range(pool.sides)}
    seats: list[tuple[str, str]] = [("", "")] * pool.players
    for ticket, team in zip(tickets, placed, strict=True):
        for player in ticket.players:
            seats[free[team].pop(0)] = (ticket.ticket_id, player)
    return Table(tuple(tickets), tuple(seats))


def form(pool: Pool, waiting: Sequence[Waiting], now: float, most: int = 1 << 30) -> list[Table]:
    """Tables of the waiting tickets at ``now``, at most ``most`` (see the module
    docstring). Each ticket is in at most one table; every pair at a table is
    :func:`compatible` at ``now``."""
    anchors = sorted(waiting, key=lambda t: (t.created, t.ticket_id))
    by_rating = sorted(anchors, key=lambda t: (t.rating, t.ticket_id))
    keys = [(t.rating, t.ticket_id) for t in by_rating]
    seated: set[str] = set()
    tables: list[Table] = []
    for anchor in anchors:
        if len(tables) >= most:
            break
        if anchor.ticket_id in seated:
            continue
        chosen = _gather(pool, anchor, by_rating, keys, now)
        if chosen is None:
            continue
        tables.append(seat(pool, chosen))
        for t in chosen:
            seated.add(t.ticket_id)
            i = bisect.bisect_left(keys, (t.rating, t.ticket_id))
            del keys[i], by_rating[i]
    return tables


def fill(pool: Pool, waiting: Sequence[Waiting], now: float, most: int = 1 << 30) -> list[Table]:
    """Tables of bots for the tickets that have waited the pool's :class:`BotFill` time
    (oldest first, at most ``most``): each ticket's party on the first team, in its order,
    a bot in every other seat. ``waiting`` are the tickets no table of people took; a party
    smaller than a team is left waiting unless the pool allows bot partners."""
    bf = pool.spec.bot_fill
    if bf is None:
        return []
    due = [
        t
        for t in sorted(waiting, key=lambda t: (t.created, t.ticket_id))
        if (now - t.created) * 1000 >= bf.after_ms and (t.size == pool.team_size or bf.partners)
    ]
    tables = []
    for ticket in due[:most]:
        seats = [("", "")] * pool.players
        mine = [s for s, team in enumerate(pool.seat_teams) if team == 0]
        for s, player in zip(mine, ticket.players, strict=False):
            seats[s] = (ticket.ticket_id, player)
        tables.append(Table((ticket,), tuple(seats)))
    return tables


def fill_due(pool: Pool, waiting: Sequence[Waiting]) -> float | None:
    """When the first of ``waiting`` may be filled with bots (seconds since the epoch), or
    ``None`` (no bot fill, or none of them ever)."""
    bf = pool.spec.bot_fill
    if bf is None:
        return None
    times = [t.created + bf.after_ms / 1000 for t in waiting if t.size == pool.team_size or bf.partners]
    return min(times, default=None)


def _gather(
    pool: Pool, anchor: Waiting, by_rating: list[Waiting], keys: list[tuple[float, str]], now: float
) -> list[Waiting] | None:
    """The anchor and the closest-rated tickets that complete a table with it, or ``None``."""
    chosen = [anchor]
    size = anchor.size
    if size > pool.team_size:
        return None
    reach = window_of(pool, anchor, now)
    i = bisect.bisect_left(keys, (anchor.rating, anchor.ticket_id))
    left, right = i - 1, i + 1
    while size < pool.players:
        take_left = left >= 0 and (
            right >= len(by_rating)
            or anchor.rating - by_rating[left].rating <= by_rating[right].rating - anchor.rating
        )
        if not take_left and right >= len(by_rating):
            return None
        cand = by_rating[left] if take_left else by_rating[right]
        if reach is not None and abs(cand.rating - anchor.rating) > reach:
            if take_left:
                left = -1  # the rest that side is farther still
            else:
                right = len(by_rating)
            continue
        if take_left:
            left -= 1
        else:
            right += 1
        if size + cand.size > pool.players or not all(compatible(pool, cand, c, now) for c in chosen):
            continue
        if pack([c.size for c in (*chosen, cand)], pool.sides, pool.team_size) is None:
            continue
        chosen.append(cand)
        size += cand.size
    return chosen


# ------------------------------------------------------------------------ credentials
def pool_key(owner: str, pool_id: str) -> str:
    """Where a pool's tickets are stored: a digest of its owner and id (any owner name)."""
    return hashlib.sha256(f"{owner}\n{pool_id}".encode()).hexdigest()[:24]


def ticket_id_for(owner: str, pool_id: str, request_id: str | None, random_hex: str) -> str:
    """A ticket's id: from the creator's ``request_id`` (a retry finds the same ticket), else
    ``random_hex`` (20 hex digits)."""
    if request_id:
        return "t" + hashlib.sha256(f"{owner}\n{pool_id}\n{request_id}".encode()).hexdigest()[:20]
    return "t" + random_hex[:20]


def ticket_token(secret: str, owner: str, pool_id: str, ticket_id: str) -> str:
    """The holder's credential of a ticket: ``tk1.<owner, base64url>.<pool>.<ticket>.<mac>``,
    an HMAC under the pool's secret."""
    who = base64.urlsafe_b64encode(owner.encode()).decode().rstrip("=")
    mac = hmac.new(bytes.fromhex(secret), f"ticket:{pool_id}:{ticket_id}".encode(), hashlib.sha256)
    return f"{TICKET_TOKEN_PREFIX}.{who}.{pool_id}.{ticket_id}.{mac.hexdigest()[:40]}"


def token_parts(token: str) -> tuple[str, str, str] | None:
    """``(owner, pool_id, ticket_id)`` of a ticket credential's parts, or ``None`` when it is
    not shaped like one (its MAC is checked against the pool's secret: :func:`ticket_token`)."""
    parts = token.split(".")
    if len(parts) != 5 or parts[0] != TICKET_TOKEN_PREFIX or len(token) > 256:
        return None
    try:
        owner = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)).decode()
    except ValueError:
        return None
    if not POOL_ID.match(parts[2]) or not TICKET_ID.match(parts[3]):
        return None
    return owner, parts[2], parts[3]

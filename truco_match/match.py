"""A match at one version, as a server knows it, and what each commit makes visible.

* :class:`Meta` -- what is fixed when a match is created, secrets included (the seed, the
  credential key): server-side only.
* :class:`Match` -- the match at one version: its setup, the engine state, the lifecycle state,
  the status. Every step makes a new one (:meth:`Match.after`), so what is derived from one --
  a viewer's view, a verified credential -- is kept on it and never goes stale.
* :class:`Moment` -- what one commit made visible: the match after it and the log entries it
  appended, redacted once per viewer (a public entry is one object for every viewer).

Times: a match's own clock is milliseconds since its creation (:meth:`Meta.at`); what leaves
the match (an :class:`~truco_match.events.EventView`'s time, ``updated_at``) is seconds since
the epoch.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import truco_engine as te
from truco_match.credentials import SPECTATOR, ExpiredCredential, issue, viewer_of
from truco_match.events import (
    DealSource,
    EventView,
    LogEntry,
    MatchStatus,
    SeatInfo,
    is_private,
    redact,
    seat_from_dict,
)
from truco_match.lifecycle import Life, Lifecycle
from truco_match.matches import MatchInfo, MatchResult
from truco_match.table import Setup, Step, bots_of
from truco_match.table import act as table_act
from truco_match.views import SeatView, view

EVERYONE = -2
"""The viewer key of what every viewer sees alike (a public entry)."""


class NotStartedError(te.TrucoError):
    """An action before the first hand is dealt (it is, once every seat has joined)."""

    def __init__(self) -> None:
        super().__init__("the first hand is dealt once every seat has joined (JoinMatch)")


@functools.lru_cache(maxsize=4096)
def _incarnation(cred_key: str) -> str:
    return hashlib.sha256(cred_key.encode()).hexdigest()[:16]


@dataclass
class Meta:
    """What is fixed when a match is created; holds secrets (the seed, the credential key)."""

    match_id: str
    owner: str
    created_at: float
    rules: dict[str, Any]
    seats: list[dict[str, Any]]
    seed: str
    """The server's (or the creator's) seed, hex."""
    cred_key: str
    deck_orders: list[list[str]]
    first_dealer: int | None
    labels: dict[str, str] = field(default_factory=dict)
    lifecycle: dict[str, Any] = field(default_factory=dict)
    source: str = DealSource.SERVER_SEED.value
    request_fingerprint: str = ""
    """What CreateMatch was asked for, to tell a retry of the same ``request_id`` from a reuse
    with another body."""
    format: int = 3
    rated: bool = False
    """Its result updates the players' ratings (every seat has a ``player_id``)."""

    @property
    def incarnation(self) -> str:
        """Which creation of ``match_id`` this is: an id comes back when a request id is reused
        after its match expired (or a store lost it), an incarnation never (it is derived from
        the random credential key)."""
        return _incarnation(self.cred_key)

    def setup(self, seats: tuple[SeatInfo, ...] | None = None) -> Setup:
        """What the match plays by (``seats``: :meth:`seat_infos`, when the caller has them)."""
        return Setup(
            rules=te.RuleSet.from_dict(self.rules),
            seed=bytes.fromhex(self.seed),
            deck_orders=tuple(tuple(d) for d in self.deck_orders),
            source=DealSource(self.source),
            lifecycle=Lifecycle.from_dict(self.lifecycle),
            first_dealer=self.first_dealer,
            bots=bots_of(self.seat_infos() if seats is None else seats),
        )

    def seat_infos(self) -> tuple[SeatInfo, ...]:
        return tuple(seat_from_dict(s) for s in self.seats)

    def token(self, viewer: int, generation: int = 0) -> str:
        """The credential of ``viewer`` at ``generation`` (:meth:`Life.credential`)."""
        return issue(self.match_id, self.cred_key, viewer, generation)

    def at(self, now: float) -> int:
        """``now`` (seconds since the epoch) as the match's time: ms since its creation."""
        return max(0, round((now - self.created_at) * 1000))

    def epoch_ms(self, ms: int) -> int:
        """A match time (ms since creation) as ms since the epoch."""
        return round(self.created_at * 1000) + ms

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Meta:
        return cls(**d)


@dataclass(slots=True, eq=False)
class Match:
    """A match at one version. Treat it as immutable: :meth:`after` makes the next one."""

    meta: Meta
    setup: Setup
    state: te.MatchState
    life: Life
    version: int
    status: MatchStatus
    updated_at: float
    seats: tuple[SeatInfo, ...] = ()
    memo: dict[Any, Any] = field(default_factory=dict)
    """What is derived from this version (views by viewer; the layers above keep their
    encodings here, under their own keys)."""
    verified: dict[str, int] = field(default_factory=dict)
    """Credentials already verified for this incarnation and credential generations: token ->
    viewer (shared by the versions that follow until a re-issue)."""

    def __post_init__(self) -> None:
        if not self.seats:
            self.seats = self.meta.seat_infos()

    @property
    def match_id(self) -> str:
        return self.meta.match_id

    @property
    def rules(self) -> te.RuleSet:
        return self.setup.rules

    @property
    def active(self) -> bool:
        return self.status is MatchStatus.ACTIVE

    def after(self, step: Step, version: int, status: MatchStatus | None, now: float) -> Match:
        """The match once ``step`` is committed at ``version`` (``status``: the one it sets)."""
        same_keys = step.life.credentials == self.life.credentials
        return Match(
            self.meta,
            self.setup,
            step.state,
            step.life,
            version,
            status or self.status,
            now,
            self.seats,
            verified=self.verified if same_keys else {},
        )

    # ----------------------------------------------------------------------- steps
    def act(self, seat: int, action: te.Action, now: float) -> Step:
        """``seat``'s action at ``now`` (epoch seconds): :func:`truco_match.table.act`, once the
        first hand is dealt. Raises :class:`NotStartedError` before that, and the engine's
        errors (:class:`truco_engine.TrucoError`) for an action it refuses."""
        if not self.life.started:
            raise NotStartedError()
        return table_act(self.setup, self.state, self.life, seat, action, self.meta.at(now))

    def spectator_delay(self, viewer: int) -> int:
        """Actions ``viewer`` sees the match late: the spectators of an active match with a
        spectator delay; every other viewer sees it as it is."""
        if viewer != SPECTATOR or not self.active:
            return 0
        return self.setup.lifecycle.spectator_delay

    # ---------------------------------------------------------------- credentials
    def viewer_of(self, token: str, who: str, token_match_id: str, now: float) -> int:
        """The seat (or :data:`~truco_match.credentials.SPECTATOR`) a credential stands for;
        raises :class:`~truco_match.credentials.InvalidCredential` for one that does not, or
        that is past the match's ``credential_ttl``."""
        viewer = self.verified.get(token)
        if viewer is None:
            life = self.life
            viewer = viewer_of(
                token,
                who,
                token_match_id,
                self.meta.match_id,
                self.meta.cred_key,
                len(self.seats),
                lambda v: life.credential(v)[0],
            )
            if len(self.verified) < 64:
                self.verified[token] = viewer
        if self.expired(viewer, now):
            raise ExpiredCredential("past its lifetime")
        return viewer

    def expires_at(self, viewer: int) -> float | None:
        """When the current credential of ``viewer`` expires (epoch seconds), or ``None``."""
        ttl = self.setup.lifecycle.credential_ttl
        if not ttl:
            return None
        return self.meta.created_at + (self.life.credential(viewer)[1] + ttl) / 1000

    def expired(self, viewer: int, now: float) -> bool:
        end = self.expires_at(viewer)
        return end is not None and now >= end

    def tokens(self) -> tuple[tuple[str, ...], str]:
        """The current credentials: one per seat, and the spectators'."""
        meta, life = self.meta, self.life
        seats = tuple(meta.token(i, life.credential(i)[0]) for i in range(len(meta.seats)))
        return seats, meta.token(SPECTATOR, life.credential(SPECTATOR)[0])

    # ---------------------------------------------------------------------- views
    def view(self, viewer: int, now: float) -> SeatView:
        """What ``viewer`` sees at this version (kept: it looks the same all version long)."""
        key = ("view", viewer)
        made = self.memo.get(key)
        if made is None:
            seat = None if viewer == SPECTATOR else viewer
            made = self.memo[key] = view(
                self.state, seat, self.version, self.status, self.life, self.meta.created_at, now
            )
        return made

    def info(self) -> MatchInfo:
        """The public description of the match."""
        m = self.meta
        return MatchInfo(
            match_id=m.match_id,
            state=self.status,
            rules=self.rules,
            seats=self.seats,
            version=self.version,
            created_at=m.created_at,
            updated_at=self.updated_at,
            labels=dict(m.labels),
            result=result_of(self.state, self.status),
            lifecycle=self.setup.lifecycle,
            fairness=self.setup.fairness(self.life),
            rated=m.rated,
        )


def result_of(state: te.MatchState, status: MatchStatus) -> MatchResult | None:
    if status is not MatchStatus.FINISHED or state.winner is None:
        return None
    return MatchResult(winner_team=state.winner, scores=tuple(state.scores), games_won=tuple(state.games))


@dataclass(slots=True, eq=False)
class Moment:
    """What one commit (or a run of them) made visible: ``entries`` (versions
    ``first_version`` on, committed at ``times``, epoch seconds) and the match after them
    (``None`` for versions read back from the log and kept in the memo of the match they lead
    to: a reference back from there would be a cycle, which only the garbage collector frees,
    and with it the match and everything it holds)."""

    match: Match | None
    entries: Sequence[LogEntry]
    first_version: int
    times: Sequence[float]
    memo: dict[Any, Any] = field(default_factory=dict)
    """The layers above keep their encodings of this moment here, under their own keys."""

    @property
    def last_version(self) -> int:
        return self.first_version + len(self.entries) - 1

    def events_for(self, viewer: int) -> tuple[EventView, ...]:
        """The entries as ``viewer`` sees them (a public entry is one object for all)."""
        key = ("events", viewer)
        made = self.memo.get(key)
        if made is None:
            made = self.memo[key] = tuple(
                self._event(i, entry, viewer) for i, entry in enumerate(self.entries)
            )
        return made

    def _event(self, i: int, entry: LogEntry, viewer: int) -> EventView:
        if not is_private(entry):
            key = ("public", i)
            shared = self.memo.get(key)
            if shared is None:
                shared = self.memo[key] = EventView(
                    self.first_version + i, redact(entry, None), self.times[i]
                )
            return shared
        seat = None if viewer == SPECTATOR else viewer
        return EventView(self.first_version + i, redact(entry, seat), self.times[i])


def replace_status(match: Match, status: MatchStatus) -> Match:
    """``match`` with another status (the same version: a status change always comes with a
    new version, so this is only for a match read with its stored status)."""
    return dataclasses.replace(match, status=status, memo={})

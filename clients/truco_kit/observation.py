"""The observation type bots and apps read: one seat's (or a spectator's) view of a match at
one version, with helpers.

It is built in one place (:meth:`Observation.from_view`) from the contract's
:class:`~truco_match.views.SeatView`, whether that came over the network (decoded by the
contract's codec) or from the local rules engine (:mod:`truco_kit.local`), so a bot sees
exactly the same object in both.

Phase names: ``playing``, ``hand_of_eleven``, ``discard``, ``hand_over``, ``match_over``.
Pending-call kinds: ``truco``, ``envido``, ``flor``, ``hand_of_eleven``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import truco_engine as te
from truco_engine.ranking import envido_points_for, has_flor_for, strength_table
from truco_kit.actions import Action
from truco_match.events import EventView, MatchStatus
from truco_match.views import ClockView, SeatView

Event = EventView
"""One event as the viewer received it: ``version``, ``payload`` (typed, already redacted),
``kind``, ``seat`` and ``data`` (the payload as a dict)."""


@dataclass(frozen=True, slots=True)
class Play:
    """One card in a trick (``card`` is ``None`` when played face down and not yours)."""

    seat: int
    card: str | None
    face_down: bool


@dataclass(frozen=True, slots=True)
class Trick:
    leader: int
    plays: tuple[Play, ...]
    winner_seat: int | None
    winner_team: int | None
    tied: bool

    @property
    def complete(self) -> bool:
        return self.tied or self.winner_seat is not None


@dataclass(frozen=True, slots=True)
class Pending:
    """The call waiting for an answer."""

    kind: str
    """``truco``, ``envido``, ``flor`` or ``hand_of_eleven``."""
    name: str
    """The last call as the rule set words it (``truco``, ``six``, ``real_envido``…)."""
    by_seat: int | None
    value_if_accepted: int
    value_if_declined: int


@dataclass(frozen=True, slots=True)
class Observation:
    """What one seat (or a spectator) sees at one version. Same object over gRPC, REST and
    locally."""

    version: int
    seat: int | None
    """Viewing seat; ``None`` for a spectator."""
    match_state: str
    """``active``, ``finished``, ``cancelled`` or ``aborted``."""
    phase: str
    preset: str
    players: int
    target_points: int
    games_to_win: int
    deck_style: str
    """``french`` or ``spanish``."""
    envido_enabled: bool
    flor_enabled: bool
    hand_number: int
    game_number: int
    dealer: int
    mano: int | None
    turn_up: str | None
    """The turned-up card (vira / muestra), if the rule set uses one."""
    special: str | None
    """``eleven`` (hand of eleven) or ``iron`` (iron hand); ``None`` for an ordinary hand."""
    my_cards: tuple[str, ...]
    hidden_count: int
    """Cards held but unseen (iron hand): play them with ``play_slot``."""
    hand_sizes: tuple[int, ...]
    revealed: Mapping[int, tuple[str, ...]]
    tricks: tuple[Trick, ...]
    seat_teams: tuple[int, ...]
    """Team of every seat this hand (carancho: the pair shares a team number)."""
    scores: tuple[int, ...]
    games_won: tuple[int, ...]
    hand_value: int
    pending: Pending | None
    awaited: tuple[int, ...]
    """Seats whose decision the game is waiting for (what a turn clock times)."""
    legal_actions: tuple[Action, ...]
    """What this viewer may do now."""
    winner_team: int | None
    """The team that won the match, once it is over with a result."""
    carancho: int | None
    """Carancho: the seat playing alone against the pair this hand."""
    head_to_head: tuple[int, ...] | None
    """Pica-pica: the two seats of the head-to-head sub-hand in progress."""
    rules: te.RuleSet
    """The match's full rule set."""
    hand_events: tuple[Event, ...] | None = None
    """Events of the current hand so far as this viewer saw them, oldest first; ``None`` when
    unknown (the client joined or resumed from a snapshot mid-hand)."""
    clock: ClockView | None = None
    """The turn clock when this observation was made (``None``: the match has none, or it is
    over): the timed seat, its deadline and milliseconds left, every seat's bank and
    expiries. See :attr:`deadline`, :attr:`ms_left`, :attr:`bank_ms`."""
    not_joined: tuple[int, ...] = ()
    """Seats that have not joined yet (a match with a join window deals once all have)."""
    joined: bool = True
    """This seat has joined (always true for a spectator and without a join window)."""
    taken_over: tuple[int, ...] = ()
    """Seats the server's bot has taken over (their players were away) and plays until their
    players act again (an action, or ``join_match``)."""
    raw: Any = field(default=None, compare=False, repr=False)
    """The :class:`SeatView` this was built from."""

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_view(
        cls, view: SeatView, rules: te.RuleSet, hand_events: Sequence[Event] | None = None
    ) -> Observation:
        """The observation of a :class:`SeatView` (the one builder, for every path)."""
        o = view.observation
        p = o.pending
        pending = (
            None
            if p is None
            else Pending(str(p.family), p.name, p.caller, p.value_if_accepted, p.value_if_declined)
        )
        if view.match_state is not MatchStatus.ACTIVE or o.phase == "over":
            phase = "match_over"
        elif o.phase == "deal":
            phase = "hand_over"
        elif p is not None and p.family is te.CallFamily.HAND_OF_ELEVEN:
            phase = "hand_of_eleven"
        elif any(a.kind == "discard" for a in o.legal_actions):
            phase = "discard"
        else:
            phase = "playing"
        return cls(
            version=view.version,
            seat=o.seat,
            match_state=str(view.match_state),
            phase=phase,
            preset=o.preset,
            players=o.players,
            target_points=rules.target_points,
            games_to_win=rules.games_to_win,
            deck_style="french" if rules.deck == "french40" else "spanish",
            envido_enabled=rules.envido,
            flor_enabled=rules.flor,
            hand_number=o.hand_number,
            game_number=o.game_number,
            dealer=o.dealer,
            mano=o.mano,
            turn_up=o.turn_up,
            special=None if o.special is None else str(o.special),
            my_cards=o.hand,
            hidden_count=o.hidden_hand,
            hand_sizes=o.hand_sizes,
            revealed=dict(o.revealed),
            tricks=tuple(
                Trick(
                    t.leader,
                    tuple(Play(pl.seat, pl.card, pl.face_down) for pl in t.plays),
                    t.winner_seat,
                    t.winner_team,
                    t.tied,
                )
                for t in o.tricks
            ),
            seat_teams=o.seat_teams,
            scores=o.scores,
            games_won=o.games_won,
            hand_value=o.hand_value,
            pending=pending,
            awaited=o.awaited,
            legal_actions=o.legal_actions,
            winner_team=o.winner_team,
            carancho=o.carancho,
            head_to_head=o.head_to_head,
            rules=rules,
            hand_events=None if hand_events is None else tuple(hand_events),
            clock=view.clock,
            not_joined=view.not_joined,
            joined=view.joined,
            taken_over=view.taken_over,
            raw=view,
        )

    @classmethod
    def from_engine(
        cls,
        obs: te.Observation,
        rules: te.RuleSet,
        version: int = 0,
        hand_events: Sequence[Event] | None = None,
    ) -> Observation:
        """An engine observation as a bot sees it (simulations inside a bot; a finished
        engine state reads as a finished match)."""
        status = MatchStatus.FINISHED if obs.phase == "over" else MatchStatus.ACTIVE
        return cls.from_view(SeatView(obs, version, status), rules, hand_events)

    # ------------------------------------------------------------------- helpers
    @property
    def team(self) -> int | None:
        """The viewer's team (side); ``None`` for a spectator."""
        if self.seat is None or self.seat >= len(self.seat_teams):
            return None
        return self.seat_teams[self.seat]

    @property
    def deadline(self) -> float | None:
        """When the awaited seat's time runs out (Unix seconds, server time), if it is timed."""
        return self.clock.deadline if self.clock is not None else None

    @property
    def ms_left(self) -> int | None:
        """Milliseconds the awaited seat had left when this observation was made (``None``
        when no decision is timed)."""
        c = self.clock
        return c.remaining_ms if c is not None and c.deadline is not None else None

    @property
    def bank_ms(self) -> tuple[int, ...]:
        """Every seat's clock bank, in milliseconds (empty without a bank)."""
        return self.clock.bank_ms if self.clock is not None else ()

    @property
    def must_join(self) -> bool:
        """This seat has to join (``join_match``) before the first hand is dealt."""
        return self.seat is not None and not self.joined and self.match_state == "active"

    @property
    def whose_turn(self) -> int | None:
        """The seat whose decision is awaited, if any."""
        return self.awaited[0] if self.awaited else None

    @property
    def is_my_turn(self) -> bool:
        """The game awaits this seat's decision (:attr:`whose_turn` is this seat)."""
        return self.seat is not None and self.whose_turn == self.seat and bool(self.legal_actions)

    @property
    def can_act(self) -> bool:
        """This viewer may act now: its turn, or an action it may take out of turn (in the
        Brazilian presets a seat may call truco while the opponent is to play)."""
        return self.seat is not None and bool(self.legal_actions)

    @property
    def is_over(self) -> bool:
        """The match has ended (finished or cancelled)."""
        return self.phase == "match_over"

    @property
    def my_score(self) -> int:
        return self.scores[self.team] if self.team is not None and self.team < len(self.scores) else 0

    @property
    def opponent_score(self) -> int:
        """The best score among the other teams."""
        others = [s for i, s in enumerate(self.scores) if i != self.team]
        return max(others) if others else 0

    @property
    def partners(self) -> tuple[int, ...]:
        t = self.team
        return tuple(x for x, tt in enumerate(self.seat_teams) if tt == t and x != self.seat)

    @property
    def opponents(self) -> tuple[int, ...]:
        t = self.team
        return tuple(x for x, tt in enumerate(self.seat_teams) if tt != t)

    @property
    def current_trick(self) -> Trick | None:
        """The trick in progress (``None`` when the last one is complete or none started)."""
        if self.tricks and not self.tricks[-1].complete:
            return self.tricks[-1]
        return None

    @property
    def trick_index(self) -> int:
        """0-based index of the trick being played."""
        return max(0, len(self.tricks) - 1) if self.current_trick is not None else len(self.tricks)

    @property
    def legal_kinds(self) -> frozenset[str]:
        return frozenset(a.kind for a in self.legal_actions)

    def can(self, kind: str) -> bool:
        """Whether an action of ``kind`` (``truco``, ``envido``, ``play``…) is legal now."""
        return kind in self.legal_kinds

    def legal(self, kind: str) -> list[Action]:
        """The legal actions of one kind."""
        return [a for a in self.legal_actions if a.kind == kind]

    @property
    def playable_cards(self) -> tuple[str, ...]:
        """Cards that may be played face up now."""
        return tuple(a.card for a in self.legal_actions if a.kind == "play" and not a.face_down and a.card)

    def strengths(self) -> dict[str, int]:
        """Strength of every card this hand (higher wins a trick)."""
        return strength_table(self.rules, self.turn_up)

    def strength(self, card: str) -> int:
        return self.strengths()[card]

    def envido_points(self, cards: Iterable[str] | None = None) -> int:
        """Envido points of ``cards`` (default: the cards dealt to me this hand)."""
        return envido_points_for(
            self.rules, self.turn_up, tuple(self.dealt_cards() if cards is None else cards)
        )

    def has_flor(self, cards: Iterable[str] | None = None) -> bool:
        return has_flor_for(self.rules, self.turn_up, tuple(self.dealt_cards() if cards is None else cards))

    def dealt_cards(self) -> tuple[str, ...]:
        """My cards this hand: the ones in hand plus the ones I already played."""
        played = tuple(p.card for t in self.tricks for p in t.plays if p.seat == self.seat and p.card)
        return self.my_cards + played

    def played_cards(self) -> tuple[str, ...]:
        """Every card visible on the table this hand."""
        return tuple(p.card for t in self.tricks for p in t.plays if p.card)


class HandTracker:
    """Keeps the events of the current hand as a viewer receives them.

    Feed every event in order with :meth:`add`; call :meth:`lost` when events were skipped
    (a snapshot): the history is then unknown until the next hand starts.
    """

    def __init__(self) -> None:
        self._events: list[Event] | None = None

    def add(self, events: Iterable[Event]) -> None:
        for e in events:
            if isinstance(e.payload, te.HandStarted):
                self._events = [e]
            elif self._events is not None:
                self._events.append(e)

    def lost(self) -> None:
        self._events = None

    @property
    def events(self) -> tuple[Event, ...] | None:
        return None if self._events is None else tuple(self._events)

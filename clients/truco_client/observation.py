"""The observation type bots and apps read, built from a ``truco.v1.Observation`` (network)
or from the engine's :class:`truco_engine.Observation` (in-process), with the same fields.

Phase names: ``playing``, ``hand_of_eleven``, ``discard``, ``hand_over``, ``match_over``.
Pending-call kinds: ``truco``, ``envido``, ``flor``, ``hand_of_eleven``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format, struct_pb2

import truco_engine as te
from truco.v1 import event_pb2, game_pb2, match_pb2, observation_pb2
from truco_client.actions import Action
from truco_client.actions import from_proto as action_from_proto
from truco_engine.ranking import envido_points_for, has_flor_for, strength_table

_PHASES = {
    observation_pb2.PHASE_DEALING: "dealing",
    observation_pb2.PHASE_PLAYING: "playing",
    observation_pb2.PHASE_HAND_OF_ELEVEN_DECISION: "hand_of_eleven",
    observation_pb2.PHASE_DISCARD: "discard",
    observation_pb2.PHASE_HAND_OVER: "hand_over",
    observation_pb2.PHASE_MATCH_OVER: "match_over",
}
_CALL_KINDS = {
    game_pb2.CALL_KIND_TRUCO: "truco",
    game_pb2.CALL_KIND_ENVIDO: "envido",
    game_pb2.CALL_KIND_FLOR: "flor",
    game_pb2.CALL_KIND_HAND_OF_ELEVEN: "hand_of_eleven",
}


def plain(value: Any) -> Any:
    """JSON value from a protobuf Struct with integral floats made ``int`` again."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def struct_to_dict(s: struct_pb2.Struct) -> dict[str, Any]:
    """A ``google.protobuf.Struct`` as a plain dict (integers stay integers)."""
    return dict(plain(json_format.MessageToDict(s)))


def rules_from_match(match: match_pb2.Match) -> te.RuleSet | None:
    """The engine rule set of a match (from ``Match.effective_rules``), if it can be built."""
    if not match.HasField("effective_rules"):
        return None
    try:
        return te.RuleSet.from_dict(struct_to_dict(match.effective_rules))
    except (te.TrucoError, TypeError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class Event:
    """One event as the viewer saw it (already redacted by the server or engine)."""

    version: int
    """Match version of the event (0 for in-process events that have none)."""
    kind: str
    """Engine event kind: ``hand_started``, ``card_played``, ``called``, ``answered``…"""
    seat: int | None
    """Seat that caused it, when one did."""
    data: Mapping[str, Any]
    """The payload (fields as in ``truco_engine.EventKind``)."""

    @classmethod
    def from_proto(cls, msg: event_pb2.Event) -> Event:
        data = struct_to_dict(msg.details)
        seat = msg.seat if msg.HasField("seat") else data.get("seat")
        return cls(msg.version, msg.kind, seat if isinstance(seat, int) else None, data)

    @classmethod
    def from_engine(cls, event: te.Event, seat: int | None, version: int = 0) -> Event:
        """An engine event, redacted for ``seat`` (``None``: spectator)."""
        d = event.redact(seat).to_dict()
        kind = d.pop("kind")
        d.pop("private_to", None)
        d.pop("hidden", None)
        who = d.get("seat")
        return cls(version, kind, who if isinstance(who, int) else None, d)


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
    """What one seat (or a spectator) sees at one version. Same shape over gRPC and locally."""

    version: int
    seat: int | None
    """Viewing seat; ``None`` for a spectator."""
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
    vira: str | None
    """The turned-up card (vira / muestra), if the rule set uses one."""
    my_cards: tuple[str, ...]
    hidden_count: int
    """Cards held but unseen (iron hand): play them with ``play_slot``."""
    hand_sizes: tuple[int, ...]
    revealed: Mapping[int, tuple[str, ...]]
    tricks: tuple[Trick, ...]
    seat_teams: tuple[int, ...]
    scores: tuple[int, ...]
    games_won: tuple[int, ...]
    hand_value: int
    pending: Pending | None
    acting_seats: tuple[int, ...]
    legal_actions: tuple[Action, ...]
    rules: te.RuleSet | None = None
    """The full engine rule set when known (always locally; over gRPC the SDK fills it in from
    ``Match.effective_rules``)."""
    hand_events: tuple[Event, ...] | None = None
    """Events of the current hand so far as this viewer saw them, oldest first; ``None`` when
    unknown (the client joined or resumed from a snapshot mid-hand)."""
    raw: Any = field(default=None, compare=False, repr=False)
    """The object this was built from (``truco.v1.Observation`` or engine observation)."""

    # ------------------------------------------------------------------ builders
    @classmethod
    def from_proto(
        cls,
        msg: observation_pb2.Observation,
        rules: te.RuleSet | None = None,
        hand_events: Sequence[Event] | None = None,
    ) -> Observation:
        pending = None
        if msg.HasField("pending_call"):
            pc = msg.pending_call
            pending = Pending(
                _CALL_KINDS.get(pc.kind, "truco"),
                pc.name,
                pc.by_seat if pc.by_seat >= 0 else None,
                pc.value_if_accepted,
                pc.value_if_declined,
            )
        tricks = tuple(
            Trick(
                t.leader,
                tuple(Play(p.seat, p.card or None, p.face_down) for p in t.plays),
                t.winner_seat if t.HasField("winner_seat") else None,
                t.winner_team if t.HasField("winner_team") else None,
                t.tied,
            )
            for t in msg.tricks
        )
        s = msg.rules
        return cls(
            version=msg.version,
            seat=msg.seat if msg.HasField("seat") else None,
            phase=_PHASES.get(msg.phase, "playing"),
            preset=s.preset,
            players=s.players,
            target_points=s.target_points,
            games_to_win=s.games_to_win or 1,
            deck_style="french" if s.deck_style == observation_pb2.DECK_STYLE_FRENCH else "spanish",
            envido_enabled=s.envido,
            flor_enabled=s.flor,
            hand_number=msg.hand_number,
            game_number=msg.game_number,
            dealer=msg.dealer,
            mano=msg.mano if msg.mano >= 0 else None,
            vira=msg.vira or None,
            my_cards=tuple(msg.my_hand),
            hidden_count=msg.my_hand_hidden_count,
            hand_sizes=tuple(msg.hand_sizes),
            revealed={int(k): tuple(v.cards) for k, v in msg.revealed_cards.items()},
            tricks=tricks,
            seat_teams=tuple(msg.seat_teams),
            scores=tuple(msg.team_scores),
            games_won=tuple(msg.games_won),
            hand_value=msg.hand_value,
            pending=pending,
            acting_seats=tuple(msg.acting_seats),
            legal_actions=tuple(action_from_proto(a) for a in msg.legal_actions),
            rules=rules,
            hand_events=None if hand_events is None else tuple(hand_events),
            raw=msg,
        )

    @classmethod
    def from_engine(
        cls,
        obs: te.Observation,
        rules: te.RuleSet,
        version: int = 0,
        hand_events: Sequence[Event] | None = None,
    ) -> Observation:
        teams = rules.play_mode == "teams"
        p = obs.pending
        pending = (
            None
            if p is None
            else Pending(p.family, p.call, p.caller, p.value_if_accepted, p.value_if_declined)
        )
        if obs.phase == "over":
            phase = "match_over"
        elif obs.phase == "deal":
            phase = "hand_over"
        elif p is not None and p.family == "hand_of_eleven":
            phase = "hand_of_eleven"
        elif any(a.kind == "discard" for a in obs.legal_actions):
            phase = "discard"
        else:
            phase = "playing"
        sides = obs.extra.get("sides")
        seat_teams = (
            tuple(sides)
            if isinstance(sides, list)
            else tuple((x % 2 if teams else x) for x in range(obs.players))
        )
        return cls(
            version=version,
            seat=obs.seat,
            phase=phase,
            preset=obs.preset,
            players=obs.players,
            target_points=rules.target_points,
            games_to_win=rules.games_to_win,
            deck_style="french" if rules.deck == "french40" else "spanish",
            envido_enabled=rules.envido,
            flor_enabled=rules.flor,
            hand_number=obs.hand_number,
            game_number=obs.game,
            dealer=obs.dealer,
            mano=obs.mano,
            vira=obs.turn_up,
            my_cards=obs.hand,
            hidden_count=obs.hidden_hand,
            hand_sizes=obs.hand_sizes,
            revealed=dict(obs.revealed),
            tricks=tuple(
                Trick(t.leader, tuple(Play(*pl) for pl in t.plays), t.winner, t.side, t.tied)
                for t in obs.tricks
            ),
            seat_teams=seat_teams,
            scores=obs.scores,
            games_won=obs.games,
            hand_value=obs.hand_value,
            pending=pending,
            acting_seats=obs.to_act,
            legal_actions=obs.legal_actions,
            rules=rules,
            hand_events=None if hand_events is None else tuple(hand_events),
            raw=obs,
        )

    # ------------------------------------------------------------------- helpers
    @property
    def team(self) -> int | None:
        """The viewer's team (side); ``None`` for a spectator."""
        if self.seat is None or self.seat >= len(self.seat_teams):
            return None
        return self.seat_teams[self.seat]

    @property
    def whose_turn(self) -> int | None:
        """The seat that acts now, if any."""
        return self.acting_seats[0] if self.acting_seats else None

    @property
    def is_my_turn(self) -> bool:
        return self.seat is not None and self.seat in self.acting_seats and bool(self.legal_actions)

    @property
    def is_over(self) -> bool:
        """The match has ended (finished or cancelled)."""
        return self.phase == "match_over"

    @property
    def winner_team(self) -> int | None:
        """The team that won the match, once it is over and decided."""
        if not self.is_over or not self.games_won:
            return None
        best = max(self.games_won)
        if best >= self.games_to_win and list(self.games_won).count(best) == 1:
            return list(self.games_won).index(best)
        return None

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

    @property
    def special(self) -> str | None:
        """``eleven`` or ``iron`` for the hand of eleven / iron hand, when known."""
        if self.hidden_count:
            return "iron"
        if self.phase == "hand_of_eleven":
            return "eleven"
        for e in self.hand_events or ():
            if e.kind == "hand_started":
                sp = e.data.get("special")
                return sp if isinstance(sp, str) else None
        return None

    def strengths(self) -> dict[str, int]:
        """Strength of every card this hand (higher wins a trick); needs ``rules``."""
        if self.rules is None:
            raise ValueError("the rule set is unknown for this observation")
        return strength_table(self.rules, self.vira)

    def strength(self, card: str) -> int:
        return self.strengths()[card]

    def envido_points(self, cards: Iterable[str] | None = None) -> int:
        """Envido points of ``cards`` (default: the cards dealt to me this hand)."""
        if self.rules is None:
            raise ValueError("the rule set is unknown for this observation")
        return envido_points_for(self.rules, self.vira, tuple(self.dealt_cards() if cards is None else cards))

    def has_flor(self, cards: Iterable[str] | None = None) -> bool:
        if self.rules is None:
            raise ValueError("the rule set is unknown for this observation")
        return has_flor_for(self.rules, self.vira, tuple(self.dealt_cards() if cards is None else cards))

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
            if e.kind == "hand_started":
                self._events = [e]
            elif self._events is not None:
                self._events.append(e)

    def lost(self) -> None:
        self._events = None

    @property
    def events(self) -> tuple[Event, ...] | None:
        return None if self._events is None else tuple(self._events)

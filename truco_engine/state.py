"""Match and hand state: plain, slotted containers with cheap copies and canonical JSON.

The state holds hidden information (every hand's cards); it is the server's, never a
player's. Players get :func:`truco_engine.observe`. Derived data (the strength table, who holds
a flor, the legal actions already asked for) is not serialized and is rebuilt on demand.

States are values: the engine never changes a state it has returned, and copies share what
no transition changes in place (finished tricks, each seat's card list, which a play
replaces rather than edits). Code outside the engine must not change a state either; build a
new one (``MatchState.from_dict``) to reach a position.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from truco_engine.enums import Phase
from truco_engine.errors import RecordError, TrucoError
from truco_engine.events import CallFamily
from truco_engine.ranking import StrengthTable, strength_table
from truco_engine.rules import RuleSet

if TYPE_CHECKING:
    from truco_engine.views import TrickView

Play = tuple[int, str, bool]
"""(seat, card, face_down) of one card played to a trick."""


class Trick:
    """One trick: who led, the cards played in order, and its outcome once complete."""

    __slots__ = ("leader", "plays", "side", "tied", "view", "winner")

    def __init__(
        self,
        leader: int,
        plays: list[Play] | None = None,
        winner: int | None = None,
        side: int | None = None,
        tied: bool = False,
    ) -> None:
        self.leader = leader
        self.plays: list[Play] = plays if plays is not None else []
        self.winner = winner
        self.side = side
        self.tied = tied
        self.view: TrickView | None = None
        """Derived: the observation's view of this trick once finished (same for every seat
        when no card was played face down)."""

    def copy(self) -> Trick:
        return Trick(self.leader, list(self.plays), self.winner, self.side, self.tied)

    def to_dict(self) -> dict[str, Any]:
        return {
            "leader": self.leader,
            "plays": [[s, c, d] for s, c, d in self.plays],
            "winner": self.winner,
            "side": self.side,
            "tied": self.tied,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trick:
        return cls(d["leader"], [(p[0], p[1], p[2]) for p in d["plays"]], d["winner"], d["side"], d["tied"])


class Call:
    """A pending call awaiting an answer.

    ``family`` is ``truco``, ``envido`` or ``flor``; ``chain`` lists the calls made so far in
    this family's chain (``["envido", "real_envido"]``); for the truco ladder ``level`` is the
    index of the proposed step.
    """

    __slots__ = ("caller", "chain", "family", "level", "responder")

    def __init__(
        self, family: CallFamily, caller: int, responder: int, chain: list[str], level: int = 0
    ) -> None:
        self.family = family
        self.caller = caller
        self.responder = responder
        self.chain = chain
        self.level = level

    def copy(self) -> Call:
        return Call(self.family, self.caller, self.responder, list(self.chain), self.level)

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family.value,
            "caller": self.caller,
            "responder": self.responder,
            "chain": list(self.chain),
            "level": self.level,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> Call | None:
        if d is None:
            return None
        return cls(CallFamily(d["family"]), d["caller"], d["responder"], list(d["chain"]), d["level"])


class HandState:
    """Everything about the hand in progress (or the one just finished)."""

    __slots__ = (
        "bet",
        "blind",
        "cards",
        "commitment",
        "dealer",
        "dealt",
        "eleven_decider",
        "eleven_side",
        "envido_open",
        "flor_holders",
        "flor_sung",
        "flor_void",
        "mano",
        "number",
        "order",
        "out",
        "over",
        "raise_side",
        "shows",
        "side_of",
        "special",
        "strength",
        "tricks",
        "truco",
        "truco_level",
        "turn",
        "turn_up",
        "value",
    )

    number: int
    dealer: int
    mano: int
    order: tuple[int, ...]
    side_of: tuple[int, ...]
    cards: list[list[str]]
    dealt: list[tuple[str, ...]]
    turn_up: str | None
    commitment: str
    strength: StrengthTable
    tricks: list[Trick]
    turn: int
    value: int
    truco_level: int
    raise_side: int | None
    truco: Call | None
    bet: Call | None
    envido_open: bool
    flor_holders: tuple[int, ...] | None
    """Derived: the seats holding a flor under the rules (void or not), once asked for."""
    flor_sung: list[int]
    flor_void: tuple[int, ...]
    special: str
    eleven_side: int | None
    eleven_decider: int | None
    blind: bool
    shows: list[tuple[int, str]]
    over: bool
    out: tuple[int, ...]
    """Seats that went to the deck alone this (sub-)hand (``fold_alone``), in the order they
    left."""

    def __init__(self) -> None:
        """An empty hand; :func:`truco_engine.deal` and :meth:`from_dict` fill it in."""

    def start_play(self, leader: int, rules: RuleSet) -> None:
        """Open the play of a (sub-)hand led by ``leader``: first trick, base value, no call
        made or pending, envido not yet played, nothing to show."""
        self.tricks = [Trick(leader)]
        self.turn = leader
        self.value = rules.base_value
        self.truco_level = -1
        self.raise_side = None
        self.truco = None
        self.bet = None
        self.envido_open = rules.envido
        self.flor_sung = []
        self.flor_void = ()
        self.shows = []
        self.over = False
        self.out = ()

    def copy(self) -> HandState:
        h = HandState()
        h.number = self.number
        h.dealer = self.dealer
        h.mano = self.mano
        h.order = self.order
        h.side_of = self.side_of
        h.cards = list(self.cards)  # each seat's list is replaced, never edited, by a play
        h.dealt = self.dealt
        h.turn_up = self.turn_up
        h.commitment = self.commitment
        h.strength = self.strength
        tricks = self.tricks  # finished tricks never change: share them, copy the current one
        h.tricks = [*tricks[:-1], tricks[-1].copy()] if tricks else []
        h.turn = self.turn
        h.value = self.value
        h.truco_level = self.truco_level
        h.raise_side = self.raise_side
        h.truco = self.truco.copy() if self.truco else None
        h.bet = self.bet.copy() if self.bet else None
        h.envido_open = self.envido_open
        h.flor_holders = self.flor_holders
        h.flor_sung = list(self.flor_sung)
        h.flor_void = self.flor_void
        h.special = self.special
        h.eleven_side = self.eleven_side
        h.eleven_decider = self.eleven_decider
        h.blind = self.blind
        h.shows = list(self.shows)
        h.over = self.over
        h.out = self.out
        return h

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "number": self.number,
            "dealer": self.dealer,
            "mano": self.mano,
            "order": list(self.order),
            "side_of": list(self.side_of),
            "cards": [list(c) for c in self.cards],
            "dealt": [list(c) for c in self.dealt],
            "turn_up": self.turn_up,
            "commitment": self.commitment,
            "tricks": [t.to_dict() for t in self.tricks],
            "turn": self.turn,
            "value": self.value,
            "truco_level": self.truco_level,
            "raise_side": self.raise_side,
            "truco": self.truco.to_dict() if self.truco else None,
            "bet": self.bet.to_dict() if self.bet else None,
            "envido_open": self.envido_open,
            "flor_sung": list(self.flor_sung),
            "special": self.special,
            "eleven_side": self.eleven_side,
            "eleven_decider": self.eleven_decider,
            "blind": self.blind,
            "shows": [[s, f] for s, f in self.shows],
            "over": self.over,
        }
        if self.flor_void:  # written only when set: states of hands without it keep their form
            d["flor_void"] = list(self.flor_void)
        if self.out:  # likewise
            d["out"] = list(self.out)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], rules: RuleSet) -> HandState:
        h = cls()
        h.number = d["number"]
        h.dealer = d["dealer"]
        h.mano = d["mano"]
        h.order = tuple(d["order"])
        h.side_of = tuple(d["side_of"])
        h.cards = [list(c) for c in d["cards"]]
        h.dealt = [tuple(c) for c in d["dealt"]]
        h.turn_up = d["turn_up"]
        h.commitment = d["commitment"]
        h.strength = strength_table(rules, h.turn_up)
        h.tricks = [Trick.from_dict(t) for t in d["tricks"]]
        h.turn = d["turn"]
        h.value = d["value"]
        h.truco_level = d["truco_level"]
        h.raise_side = d["raise_side"]
        h.truco = Call.from_dict(d["truco"])
        h.bet = Call.from_dict(d["bet"])
        h.envido_open = d["envido_open"]
        h.flor_holders = None
        h.flor_sung = list(d["flor_sung"])
        h.flor_void = tuple(d.get("flor_void", ()))
        h.special = d["special"]
        h.eleven_side = d["eleven_side"]
        h.eleven_decider = d["eleven_decider"]
        h.blind = d["blind"]
        h.shows = [(s[0], s[1]) for s in d["shows"]]
        h.over = d["over"]
        h.out = tuple(d.get("out", ()))
        return h


class MatchState:
    """The whole match: rules, scores, games, whose deal, and the current hand.

    ``phase`` is ``deal`` (a deck order is awaited: the chance step), ``play`` or ``over``.
    ``actions`` counts the actions applied so far; it identifies each decision point (the
    server hangs turn deadlines on it).
    """

    __slots__ = (
        "actions",
        "dealer",
        "game",
        "games",
        "hand",
        "hands",
        "legal_memo",
        "phase",
        "rules",
        "scores",
        "winner",
    )

    rules: RuleSet
    scores: list[int]
    games: list[int]
    game: int
    hands: int
    dealer: int
    hand: HandState | None
    phase: Phase
    winner: int | None
    actions: int
    legal_memo: dict[int, tuple[Any, ...]] | None
    """Derived: the legal actions already computed for this state, by seat (never copied,
    never serialized)."""

    def __init__(self) -> None:
        """An empty state; :func:`truco_engine.new_match` and :meth:`from_dict` fill it in."""

    def copy(self) -> MatchState:
        s = MatchState()
        s.rules = self.rules
        s.scores = list(self.scores)
        s.games = list(self.games)
        s.game = self.game
        s.hands = self.hands
        s.dealer = self.dealer
        s.hand = self.hand.copy() if self.hand is not None else None
        s.phase = self.phase
        s.winner = self.winner
        s.actions = self.actions
        s.legal_memo = None
        return s

    def to_dict(self, *, rules: bool = True) -> dict[str, Any]:
        """JSON-able mapping of the whole state (hidden information included).

        ``rules=False`` leaves the rule set out (the larger part of the mapping, and of the
        cost of building it): for a store that keeps the match's rules once beside its
        states and passes them back to :meth:`from_dict`."""
        d: dict[str, Any] = {
            "format": STATE_FORMAT,
            "scores": list(self.scores),
            "games": list(self.games),
            "game": self.game,
            "hands": self.hands,
            "dealer": self.dealer,
            "hand": self.hand.to_dict() if self.hand is not None else None,
            "phase": self.phase.value,
            "winner": self.winner,
            "actions": self.actions,
        }
        if rules:
            d["rules"] = self.rules.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], rules: RuleSet | None = None) -> MatchState:
        """Inverse of :meth:`to_dict`. ``rules``: the match's rule set, needed for a mapping
        made with ``to_dict(rules=False)``; when given it is used, and a rule set in ``d``
        (every mapping made with ``rules=True`` has one) is not read."""
        if not isinstance(d, dict) or d.get("format") != STATE_FORMAT:
            raise RecordError(f"not a match state of format {STATE_FORMAT!r}")
        try:
            s = cls()
            s.rules = RuleSet.from_dict(d["rules"]) if rules is None else rules
            s.scores = list(d["scores"])
            s.games = list(d["games"])
            s.game = d["game"]
            s.hands = d["hands"]
            s.dealer = d["dealer"]
            s.hand = HandState.from_dict(d["hand"], s.rules) if d["hand"] is not None else None
            s.phase = _phase(d["phase"])
            s.winner = d["winner"]
            s.actions = d["actions"]
            s.legal_memo = None
        except TrucoError:
            raise
        except (KeyError, TypeError, IndexError, ValueError) as exc:
            raise RecordError(f"malformed match state: {exc!r}") from exc
        return s

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MatchState) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


STATE_FORMAT = "truco-state/1"


def _phase(value: object) -> Phase:
    if not isinstance(value, str) or value not in tuple(Phase):
        raise RecordError(f"malformed match state: phase {value!r}; phases are: {', '.join(Phase)}")
    return Phase(value)

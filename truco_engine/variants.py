"""Table shapes as hooks, beside the ranking hooks: teams, each for himself, carancho, pica-pica.

A :class:`TableShape` answers the questions whose answer depends on who plays with whom: the
team of every seat, how the cards are dealt, whether folding is allowed, whose score a side's
points go to and who takes the game, what happens when a (sub-)hand ends.
:func:`shape_of` picks the shape of a rule set; the rest of the engine asks it and never
tests the play mode itself.

Carancho (seed 001: "com três pessoas, onde os jogadores se revezam, formando duplas contra um
jogador sozinho, o carancho ... os pontos são contados individualmente (mas a dupla ganha os
pontos em conjunto). O carancho sempre recebe a primeira carta e uma carta extra. Destas, pode
escolher as três melhores e descartar uma"):

* The carancho is the hand's mano (he receives the first card), so the role rotates with the
  deal. After the three rounds of the deal he receives one extra card, and his first action is
  ``discard`` (the discarded card is never shown to anybody else).
* The other two play as a pair. Scores are kept per player; points won by the pair are added to
  both partners. ``side_of`` maps the carancho to his own seat and both partners to the lower
  of their two seats (a score index of the pair).

Pica-pica (``pica_pica``; seed 001: "Nas modalidades de 6 a 12 pessoas, as rodadas ímpares são
jogadas em equipes e as rodadas pares são jogadas individualmente, somente os jogadores que
estão de frente para o outro (as chamadas partidas de testa). Neste caso, os pontos individuais
contam para a equipe como um todo"):

* Odd hands are played by the teams; even hands are head-to-head rounds made of one sub-hand
  per pair of opponents, starting with the mano's pair and going round in play order. Every
  player keeps the three cards dealt to him.
* Who plays whom (:func:`head_to_head_pairs`): with 6 or 10 players the seat facing a player
  is an opponent (``x`` and ``x + players/2``); with 8 or 12 it is a partner, so each player
  of the first team plays the opponent seated just after the partner facing him
  (``x + players/2 + 1``) -- the nearest opponent to "de frente".
* A sub-hand is a complete two-player hand (truco, envido, flor, parda rules, fold), with the
  pair's first seat in play order (from the hand's mano) as its mano; its points go to the
  player's team. The hand is over when the last pair has finished (or the game ended).
* No head-to-head round once a side is within :data:`PICA_PICA_STOP` points of the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from truco_engine.enums import PlayMode
from truco_engine.events import Event, HeadToHeadStarted
from truco_engine.rules import RuleSet
from truco_engine.state import HandState, MatchState

PICA_PICA_STOP: Final = 5
"""Head-to-head rounds stop when a side needs this many points or fewer ("hasta faltar 5
tantos para la terminación del partido")."""


class TableShape:
    """Two teams, partners alternating around the table (the default shape)."""

    name = "teams"

    def sides(self, rules: RuleSet, mano: int) -> tuple[int, ...]:
        """The team (score holder) of every seat for a hand whose mano is ``mano``."""
        return tuple(seat % 2 for seat in range(rules.players))

    def deal(self, rules: RuleSet, deck: Sequence[str], order: Sequence[int]) -> tuple[list[list[str]], int]:
        """The cards of every seat (index = seat) and the index of the next card of ``deck``:
        one card at a time from the mano (``order[0]``) in play order, three rounds."""
        n = len(order)
        cards: list[list[str]] = [[] for _ in range(n)]
        for k in range(3):
            for i, seat in enumerate(order):
                cards[seat].append(deck[k * n + i])
        return cards, 3 * n

    def may_fold(self, rules: RuleSet) -> bool:
        """Whether a seat may fold (irse al mazo) under these rules."""
        return rules.fold

    def score_holders(self, h: HandState | None, side: int) -> list[int]:
        """The score indexes that ``side``'s points go to."""
        return [side]

    def game_winner(self, s: MatchState, holders: Sequence[int]) -> int | None:
        """The score holder that takes the game after ``holders`` scored, or ``None``."""
        side = holders[0]
        return side if s.scores[side] >= s.rules.target_points else None

    def begin_hand(self, s: MatchState, h: HandState, ev: list[Event]) -> None:
        """Called once the cards are dealt (pica-pica starts its first sub-hand here)."""

    def next_sub_hand(self, s: MatchState, h: HandState, ev: list[Event]) -> bool:
        """Called when a (sub-)hand ended without ending the game: start the next sub-hand
        and return True, or return False (the next deal is awaited)."""
        return False

    def head_to_head(self, s: MatchState, h: HandState) -> tuple[int, ...] | None:
        """The two seats of the head-to-head sub-hand in progress, if any."""
        return None

    def carancho(self, h: HandState) -> int | None:
        """The seat playing alone against the pair this hand, if any."""
        return None


class IndividualShape(TableShape):
    """Three players, each for himself: every seat is its own score holder; no folding
    (seed 002: "(not in a three-player game)")."""

    name = "individual"

    def sides(self, rules: RuleSet, mano: int) -> tuple[int, ...]:
        return tuple(range(rules.players))

    def may_fold(self, rules: RuleSet) -> bool:
        return False


class CaranchoShape(TableShape):
    """Two against the carancho (the mano), who gets a fourth card and discards one; the
    pair's points go to both partners, each keeping his own score."""

    name = "carancho"

    def sides(self, rules: RuleSet, mano: int) -> tuple[int, ...]:
        return carancho_sides(mano, rules.players)

    def deal(self, rules: RuleSet, deck: Sequence[str], order: Sequence[int]) -> tuple[list[list[str]], int]:
        cards, nxt = super().deal(rules, deck, order)
        cards[order[0]].append(deck[nxt])  # the carancho (the mano) receives one extra card
        return cards, nxt + 1

    def score_holders(self, h: HandState | None, side: int) -> list[int]:
        if h is None:
            return [side]
        return [x for x in h.order if h.side_of[x] == side]

    def game_winner(self, s: MatchState, holders: Sequence[int]) -> int | None:
        reached = [x for x in holders if s.scores[x] >= s.rules.target_points]
        if not reached:
            return None
        return max(reached, key=lambda x: s.scores[x])  # equal: the one nearer the mano

    def carancho(self, h: HandState) -> int | None:
        return h.mano


class PicaPicaShape(TableShape):
    """Teams whose every second hand is a round of head-to-head sub-hands."""

    name = "pica_pica"

    def begin_hand(self, s: MatchState, h: HandState, ev: list[Event]) -> None:
        if is_pica_round(s, h.number):
            start_sub_hand(s, h, 0, ev)

    def next_sub_hand(self, s: MatchState, h: HandState, ev: list[Event]) -> bool:
        if not is_sub_hand(s, h):
            return False
        k = sub_hand_index(s, h) + 1
        if k >= s.rules.players // 2:
            return False
        start_sub_hand(s, h, k, ev)
        return True

    def head_to_head(self, s: MatchState, h: HandState) -> tuple[int, ...] | None:
        return tuple(h.order) if is_sub_hand(s, h) else None


TEAMS: Final = TableShape()
INDIVIDUAL: Final = IndividualShape()
CARANCHO: Final = CaranchoShape()
PICA_PICA: Final = PicaPicaShape()
SHAPES: Final[dict[str, TableShape]] = {
    PlayMode.TEAMS: TEAMS,
    PlayMode.INDIVIDUAL: INDIVIDUAL,
    PlayMode.CARANCHO: CARANCHO,
    "pica_pica": PICA_PICA,
}
"""Every table shape by name (the play modes, plus ``pica_pica`` for teams with head-to-head
rounds)."""


def shape_of(rules: RuleSet) -> TableShape:
    """The table shape a rule set plays."""
    if rules.pica_pica:
        return PICA_PICA
    return SHAPES[rules.play_mode]


def table_sides(rules: RuleSet, mano: int) -> tuple[int, ...]:
    """The side (team) of every seat for a hand whose mano is ``mano``."""
    return shape_of(rules).sides(rules, mano)


def carancho_sides(mano: int, players: int) -> tuple[int, ...]:
    """``side_of`` for a carancho hand: the carancho alone, the pair under its lower seat."""
    pair = min(x for x in range(players) if x != mano)
    return tuple(x if x == mano else pair for x in range(players))


# ----------------------------------------------------------------------- pica-pica
def is_pica_round(s: MatchState, number: int) -> bool:
    """Whether hand ``number`` is a head-to-head round."""
    r = s.rules
    if not r.pica_pica or number % 2:
        return False
    return max(s.scores) < r.target_points - PICA_PICA_STOP


def is_sub_hand(s: MatchState, h: HandState) -> bool:
    """Whether the hand in progress is a head-to-head sub-hand (its order is one pair)."""
    return len(h.order) == 2 and s.rules.players > 2


@lru_cache(maxsize=64)
def head_to_head_pairs(players: int, mano: int) -> tuple[tuple[int, int], ...]:
    """The pairs of a head-to-head round, in the order they play: going round in play order
    from the mano, each seat not yet paired plays its opponent "de frente" (the facing seat
    with 6 or 10 players; with 8 or 12, where the facing seat is a partner, the opponent
    seated just after it). The first seat of each pair is its mano."""
    half = players // 2
    step = half if half % 2 else half + 1  # an odd step always reaches an opponent
    rival = {}
    for even in range(0, players, 2):
        odd = (even + step) % players
        rival[even], rival[odd] = odd, even
    pairs: list[tuple[int, int]] = []
    seen: set[int] = set()
    for i in range(players):
        x = (mano + i) % players
        if x not in seen:
            pairs.append((x, rival[x]))
            seen.update((x, rival[x]))
    return tuple(pairs)


def pair_order(s: MatchState, h: HandState, k: int) -> tuple[int, int]:
    """The ``k``-th pair of a head-to-head round, in play order (the first seat leads)."""
    return head_to_head_pairs(s.rules.players, (h.dealer + 1) % s.rules.players)[k]


def sub_hand_index(s: MatchState, h: HandState) -> int:
    """Index of the sub-hand in progress within its round."""
    pairs = head_to_head_pairs(s.rules.players, (h.dealer + 1) % s.rules.players)
    return pairs.index((h.order[0], h.order[1]))


def start_sub_hand(s: MatchState, h: HandState, k: int, ev: list[Event]) -> None:
    """Reset the hand for its ``k``-th head-to-head sub-hand."""
    order = pair_order(s, h, k)
    h.order = order
    h.mano = order[0]
    h.start_play(order[0], s.rules)
    ev.append(Event(HeadToHeadStarted(seats=order, mano=order[0], index=k)))


def next_sub_hand(s: MatchState, h: HandState) -> int | None:
    """Index of the sub-hand after the current one, or ``None`` after the last."""
    k = sub_hand_index(s, h) + 1
    return k if k < s.rules.players // 2 else None

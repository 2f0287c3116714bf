"""Table shapes beyond plain teams: the three-player carancho and six-player pica-pica.

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
  per pair of facing players (seat ``x`` against seat ``x + players/2``), starting with the
  mano's pair and going round in play order. Every player keeps the three cards dealt to him.
* A sub-hand is a complete two-player hand (truco, envido, flor, parda rules, fold), with the
  first seat of the pair as its mano; its points go to the player's team. The hand is over
  when the last pair has finished (or the game ended).
* No head-to-head round once a side is within :data:`PICA_PICA_STOP` points of the target.
"""

from __future__ import annotations

from typing import Final

from truco_engine.events import Event, HeadToHeadStarted
from truco_engine.rules import RuleSet
from truco_engine.state import HandState, MatchState

PICA_PICA_STOP: Final = 5
"""Head-to-head rounds stop when a side needs this many points or fewer ("hasta faltar 5
tantos para la terminación del partido")."""


def table_sides(rules: RuleSet, mano: int) -> tuple[int, ...]:
    """The side (team) of every seat for a hand whose mano is ``mano``: partners alternate in
    teams; each seat is its own side in individual play; the carancho alone against the pair."""
    n = rules.players
    if rules.play_mode == "teams":
        return tuple(seat % 2 for seat in range(n))
    if rules.play_mode == "carancho":
        return carancho_sides(mano, n)
    return tuple(range(n))


def carancho_sides(mano: int, players: int) -> tuple[int, ...]:
    """``side_of`` for a carancho hand: the carancho alone, the pair under its lower seat."""
    pair = min(x for x in range(players) if x != mano)
    return tuple(x if x == mano else pair for x in range(players))


def is_pica_round(s: MatchState, number: int) -> bool:
    """Whether hand ``number`` is a head-to-head round."""
    r = s.rules
    if not r.pica_pica or number % 2:
        return False
    return max(s.scores) < r.target_points - PICA_PICA_STOP


def is_sub_hand(s: MatchState, h: HandState) -> bool:
    """Whether the hand in progress is a head-to-head sub-hand (its order is one pair)."""
    return len(h.order) == 2 and s.rules.players > 2


def pair_order(s: MatchState, h: HandState, k: int) -> tuple[int, int]:
    """The ``k``-th pair of a head-to-head round, in play order (the first seat leads)."""
    n = s.rules.players
    first = (h.dealer + 1 + k) % n
    return first, (first + n // 2) % n


def start_sub_hand(s: MatchState, h: HandState, k: int, ev: list[Event]) -> None:
    """Reset the hand for its ``k``-th head-to-head sub-hand."""
    r = s.rules
    order = pair_order(s, h, k)
    h.order = order
    h.mano = order[0]
    h.start_play(order[0], r)
    ev.append(Event(HeadToHeadStarted(seats=order, mano=order[0], index=k)))


def next_sub_hand(s: MatchState, h: HandState) -> int | None:
    """Index of the sub-hand after the current one, or ``None`` after the last."""
    n = s.rules.players
    k = (h.order[0] - (h.dealer + 1)) % n
    return k + 1 if k + 1 < n // 2 else None

"""The ``rules`` heuristics as a model of a player, read straight from an engine state.

A searching bot imagines worlds (complete deals consistent with what it saw) and needs, inside
each, a model of how every seat plays: to finish the hand (a rollout) and to judge how likely
the world is given what the other seats did (a seat that called truco probably holds strong
cards). :func:`policy` is that model: the decisions of :class:`~truco_bots.rules_bot.RulesBot`
(the same thresholds, the same bluffs, as probabilities), computed from the engine state of a
world for one seat with what that seat knows there -- its own cards and the table -- without
building an observation, which makes it several times cheaper. :func:`likelihood` is the
probability the model gives an action, mixed with a uniform choice so that a seat that plays
otherwise (a person, another bot) makes a world less likely, not impossible.
"""

from __future__ import annotations

import random

import truco_engine as te
from truco_bots.heuristics import hand_power, percentiles
from truco_bots.rules_bot import ENVIDO_NEED, RulesBot
from truco_engine import scoring
from truco_engine.ranking import envido_points_for, has_flor_for
from truco_engine.state import HandState

Choice = list[tuple[te.Action, float]]
"""Actions and their probabilities (summing to 1)."""

_ACCEPT = te.Action("accept")
_DECLINE = te.Action("decline")
_TRUCO = te.Action("truco")
_FLOR = te.Action("flor")
_ENVIDO = te.Action("envido")
_REAL_ENVIDO = te.Action("real_envido")
_CONTRAFLOR = te.Action("contraflor")
_BLUFF = RulesBot.bluff

SURPRISE = 0.1
"""The share of a uniform choice in :func:`likelihood` (a seat is not always the model)."""


def policy(s: te.MatchState, seat: int) -> Choice:
    """What the ``rules`` heuristics do for ``seat`` in ``s``, with their probabilities."""
    legal = te.legal_actions(s, seat)
    if len(legal) == 1:
        return [(legal[0], 1.0)]
    h = s.hand
    assert h is not None
    r = s.rules
    kinds = {a.kind for a in legal}
    if h.blind:
        plays = [a for a in legal if a.kind == "play"]
        return [(a, 1 / len(plays)) for a in plays] if plays else [(legal[0], 1.0)]
    pct = percentiles(r, h.turn_up)
    if "discard" in kinds:
        return [
            (min((a for a in legal if a.kind == "discard"), key=lambda a: pct.get(a.card or "", 0.0)), 1.0)
        ]
    if "flor" in kinds:
        return [(_FLOR, 1.0)]
    power = _power(s, h, seat, pct)
    pending = _pending(h)
    if pending is not None and ("accept" in kinds or "decline" in kinds):
        return _answer(s, h, seat, pending, kinds, power)
    if r.envido and ("envido" in kinds or "real_envido" in kinds):
        pts = envido_points_for(r, h.turn_up, h.dealt[seat])
        if pts >= 31 and "real_envido" in kinds:
            return [(_REAL_ENVIDO, 1.0)]
        if pts >= 28 and "envido" in kinds:
            return [(_ENVIDO, 1.0)]
    otherwise = _play(h, seat, legal, pct) if "play" in kinds else legal[0]
    if "truco" in kinds:
        p = 0.0 if pending is not None else _truco_chance(h, seat, pct, power)
        if p >= 1.0:
            return [(_TRUCO, 1.0)]
        return [(_TRUCO, p), (otherwise, 1.0 - p)]
    return [(otherwise, 1.0)]


def act(s: te.MatchState, seat: int, rng: random.Random) -> te.Action:
    """One decision of the model for ``seat``."""
    choice = policy(s, seat)
    if len(choice) == 1:
        return choice[0][0]
    x = rng.random()
    for action, p in choice:
        x -= p
        if x < 0:
            return action
    return choice[-1][0]


def likelihood(s: te.MatchState, seat: int, action: te.Action) -> float:
    """How likely ``seat`` makes ``action`` in ``s``: the model's probability, mixed with a
    uniform choice among the legal actions (:data:`SURPRISE`)."""
    choice = policy(s, seat)
    p = sum(q for a, q in choice if a == action)
    n = len(te.legal_actions(s, seat))
    return (1 - SURPRISE) * p + SURPRISE / max(1, n)


def rollout(s: te.MatchState, rng: random.Random, max_steps: int = 200) -> te.MatchState:
    """The rest of the hand with every seat played by the model."""
    steps = 0
    while s.phase == "play" and steps < max_steps:
        seat = te.to_act(s)[0]
        s, _ = te.apply(s, seat, act(s, seat, rng))
        steps += 1
    return s


# ----------------------------------------------------------------------------- parts
def _pending(h: HandState) -> str | None:
    if h.eleven_decider is not None:
        return "hand_of_eleven"
    if h.bet is not None:
        return str(h.bet.family)
    if h.truco is not None:
        return "truco"
    return None


def _power(s: te.MatchState, h: HandState, seat: int, pct: dict[str, float]) -> float:
    team = h.side_of[seat]
    won = lost = 0
    for t in h.tricks:
        if t.tied or t.winner is not None:
            if t.side == team:
                won += 1
            elif t.side is not None:
                lost += 1
    base = hand_power([pct[c] for c in h.cards[seat]])
    if h.special == "eleven" and team == h.eleven_side and not h.over:
        partner = [pct[c] for x in h.order if x != seat and h.side_of[x] == team for c in h.cards[x]]
        if partner:
            base = max(base, hand_power(partner))
    return max(0.0, min(1.0, base + 0.25 * won - 0.3 * lost))


def _answer(s: te.MatchState, h: HandState, seat: int, pending: str, kinds: set[str], power: float) -> Choice:
    r = s.rules
    if pending == "hand_of_eleven":
        return [(_ACCEPT if power >= 0.55 else _DECLINE, 1.0)]
    dealt = h.dealt[seat]
    if pending == "flor":
        flor = has_flor_for(r, h.turn_up, dealt)
        pts = envido_points_for(r, h.turn_up, dealt)
        if "contraflor" in kinds and flor and pts >= 33:
            return [(_CONTRAFLOR, 1.0)]
        return [(_ACCEPT if flor and pts >= 29 else _DECLINE, 1.0)]
    if pending == "envido":
        assert h.bet is not None
        pts = envido_points_for(r, h.turn_up, dealt) if r.envido else 0
        need = ENVIDO_NEED.get(h.bet.chain[-1], 27)
        if pts >= 32 and "real_envido" in kinds:
            return [(_REAL_ENVIDO, 1.0)]
        declined = scoring.bet_values(s, h.bet)[1]
        return [(_ACCEPT if pts >= need or (declined <= 1 and pts >= need - 2) else _DECLINE, 1.0)]
    if r.envido and "envido" in kinds and envido_points_for(r, h.turn_up, dealt) >= 28:
        return [(_ENVIDO, 1.0)]
    if power >= 0.88 and "truco" in kinds:
        return [(_TRUCO, 1.0)]
    if power >= 0.62:
        return [(_ACCEPT, 1.0)]
    return [(_ACCEPT, _BLUFF), (_DECLINE, 1.0 - _BLUFF)]


def _truco_chance(h: HandState, seat: int, pct: dict[str, float], power: float) -> float:
    if power >= 0.8:
        return 1.0
    trick = h.tricks[-1] if h.tricks and not (h.tricks[-1].tied or h.tricks[-1].winner is not None) else None
    mine = h.cards[seat]
    if trick is not None and trick.plays and mine:
        team = h.side_of[seat]
        best = max((pct[c] for x, c, down in trick.plays if not down and h.side_of[x] != team), default=0)
        if max(pct[c] for c in mine) > best and power >= 0.65:
            return 1.0
    return _BLUFF * 0.5


def _play(h: HandState, seat: int, legal: list[te.Action], pct: dict[str, float]) -> te.Action:
    plays = [a for a in legal if a.kind == "play" and not a.face_down and a.card]
    if not plays:
        return next(a for a in legal if a.kind == "play")
    by_strength = sorted(plays, key=lambda a: pct[a.card or ""])
    trick = h.tricks[-1] if h.tricks and not (h.tricks[-1].tied or h.tricks[-1].winner is not None) else None
    table = [(x, c) for x, c, down in trick.plays if not down or x == seat] if trick is not None else []
    if not table:
        index = max(0, len(h.tricks) - 1) if trick is not None else len(h.tricks)
        if index == 0 and len(by_strength) == 3:
            return by_strength[1]
        return by_strength[-1]
    bx, bc = max(table, key=lambda p: pct[p[1]])
    if h.side_of[bx] == h.side_of[seat]:
        return by_strength[0]
    for a in by_strength:
        if pct[a.card or ""] > pct[bc]:
            return a
    return by_strength[0]

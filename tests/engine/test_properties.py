"""Property tests over every registered preset and every player count it accepts.

The cases are computed from :func:`truco_engine.preset_names` at collection time, so
presets registered later (River Plate, the larger Brazilian tables) are covered without
editing this file. Randomness lives in the driver (a seeded ``random.Random``).

Properties (checked together along one random match per example, to keep the suite fast):

* random legal play always ends within a bound on the number of steps, the driver sometimes
  giving the move to a seat the game is not waiting for (any legal action from any seat);
* every observation's ``legal_actions`` is that seat's own legal set, awaited or not;
* each hand's score change equals what its events say it is worth: the accepted value
  (or the hand of eleven / iron hand value), the decline value of the last call, the
  refusal value, plus bets (envido/flor) won;
* no observation or redacted event for a seat (or a spectator) ever contains a card that
  seat may not know: its own dealt cards (not in the iron hand), the turn-up card, cards
  played face up, its partners' cards at the hand of eleven when its side is at eleven,
  and cards of a side that won a bet (envido, flor), revealed at the end of the hand;
* ``replay(record)`` rebuilds the live state; states, records and events round-trip
  through JSON.

The same properties hold with every house rule switched on (``tests/helpers/house_rules.py``),
plus: no truco call is made once the hand is worth what every side needs
(``truco_capped_at_game``), and a seat that folded alone holds no card and has no legal action
for the rest of its hand (``fold_alone``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.events import data
from tests.helpers.house_rules import HOUSE_RULES, house_fields, with_house_rules
from truco_engine import (
    Event,
    EventKind,
    InvalidRulesError,
    Match,
    MatchRecord,
    MatchState,
    RecordError,
    RuleSet,
    apply,
    deal,
    get_rules,
    is_legal,
    legal_actions,
    observe,
    preset_names,
    replay,
    seat_teams,
    state_from_json,
    state_to_json,
    to_act,
)
from truco_engine.actions import Action
from truco_engine.moves import MOVES, Ctx
from truco_engine.ranking import USES_TURN_UP

MAX_DEALS = 400
EXAMPLES = int(os.environ.get("TRUCO_PROPERTY_EXAMPLES", "20"))
"""Examples per case (every preset × player count); raise it for a thorough run."""
MAX_ACTIONS = 6000
OUT_OF_TURN = 0.25
"""How often the driver offers the move to a random other seat (it acts if it has any legal
action: a truco call out of turn, a flor over a pending envido)."""


def _cases() -> list[tuple[str, int]]:
    out = []
    for name in preset_names():
        for n in range(2, 13):
            try:
                get_rules(name, players=n)
            except InvalidRulesError:
                continue
            out.append((name, n))
    return out


CASES = _cases()
IDS = [f"{name}-{n}p" for name, n in CASES]


def _house_cases() -> list[tuple[str, int]]:
    """Every preset at its own table size and, where that is not 4 and a team game of 4 is
    allowed, at 4 players (where partners can fold alone)."""
    out = []
    for name in preset_names():
        n = get_rules(name).players
        out.append((name, n))
        if n != 4 and (name, 4) in CASES and get_rules(name, players=4).play_mode == "teams":
            out.append((name, 4))
    return out


HOUSE_CASES = _house_cases()
HOUSE_IDS = [f"{name}-{n}p-house" for name, n in HOUSE_CASES]
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


def play(
    rules: RuleSet, seed: int, start: MatchState | None = None
) -> Iterator[tuple[MatchState, list[Event], MatchState]]:
    """Random legal play to the end: yields (state before, events, state after) per step.
    Raises if the match does not end within the bounds."""
    rng = random.Random(seed)
    m = Match(rules)
    if start is not None:
        m.state = start
    deck = list(rules.deck_cards)
    deals = actions = 0
    while m.state.phase != "over":
        before = m.state
        if m.state.phase == "deal":
            deals += 1
            assert deals <= MAX_DEALS, "the match did not end"
            rng.shuffle(deck)
            events = m.deal(deck, salt=str(deals))
        else:
            actions += 1
            assert actions <= MAX_ACTIONS, "the match did not end"
            seat = to_act(m.state)[0]
            legal = legal_actions(m.state, seat)
            assert legal, "the seat to act has no legal action"
            if rng.random() < OUT_OF_TURN:  # now and then, a seat the game is not waiting for
                other = rng.randrange(rules.players)
                extra = legal_actions(m.state, other) if other != seat else []
                if extra:
                    seat, legal = other, extra
            action = legal[rng.randrange(len(legal))]
            assert is_legal(m.state, seat, action)
            events = m.act(seat, action)
        yield before, events, m.state
    play.last_record = m.record  # type: ignore[attr-defined]


def near_end(rules: RuleSet, rng: random.Random) -> MatchState:
    """A fresh match whose scores start anywhere below the target (reaches the hand of
    eleven and the iron hand often)."""
    from truco_engine import new_match

    d = new_match(rules).to_dict()
    d["scores"] = [rng.randrange(rules.target_points) for _ in range(rules.sides)]
    return MatchState.from_dict(d)


GAME = -1
"""The value of a hand whose game step (joc fora) was accepted: what its winner needs."""


class ValueTracker:
    """Derives from the events alone what each hand should pay, and checks the scores."""

    def __init__(self, rules: RuleSet) -> None:
        self.r = rules
        self.scores = [0] * rules.sides
        self.game = 1
        self.start: list[int] = list(self.scores)
        self.expected = [0] * rules.sides
        self.value = 0
        self.pending: int | None = None
        self.special: str | None = None
        self.open = False

    def holders(self, team: int, teams: tuple[int, ...]) -> list[int]:
        """The score indexes a team's points go to: the team's, or (carancho) each
        partner's."""
        if self.r.play_mode != "carancho":
            return [team]
        return [x for x, t in enumerate(teams) if t == team]

    def close(self) -> None:
        if not self.open:
            return
        delta = [a - b for a, b in zip(self.scores, self.start, strict=True)]
        assert delta == self.expected, (delta, self.expected)
        self.open = False

    def feed(self, e: Event, teams: tuple[int, ...]) -> None:
        """``teams``: every seat's team this hand (carancho: both partners hold the pair's
        score)."""
        d = data(e)
        r = self.r
        if e.kind == EventKind.HAND_STARTED:
            self.close()
            if d["game_number"] != self.game:
                self.game = d["game_number"]
                self.scores = [0] * r.sides
            self.start = list(self.scores)
            self.expected = [0] * r.sides
            self.special = d.get("special")
            self.value = r.hand_of_eleven_value if self.special == "eleven" else r.base_value
            self.pending = None
            self.open = True
        elif e.kind == EventKind.HEAD_TO_HEAD_STARTED:  # pica-pica: a two-player sub-hand
            self.value = r.base_value
            self.pending = None
        elif e.kind == EventKind.CALL_MADE and d["family"] == "truco":
            assert self.special is None, "no truco in the hand of eleven or the iron hand"
            if self.pending is not None:  # a raise accepts the raised call
                self.value = self.pending
            assert d["value_if_declined"] == self.value
            if r.truco_capped_at_game and r.play_mode != "carancho":  # a call that can still matter
                assert self.value < r.target_points - min(self.scores), (self.value, self.scores)
            if d["name"] == r.truco_game_call:  # joc fora: the hand is worth the game
                assert d["value_if_accepted"] == r.target_points - min(self.scores)
                self.pending = GAME
            else:
                assert d["value_if_accepted"] in r.truco_ladder and d["value_if_accepted"] > self.value
                self.pending = d["value_if_accepted"]
        elif e.kind == EventKind.CALL_ANSWERED and d["family"] == "truco":
            if d["accepted"]:
                assert self.pending is not None
                self.value = self.pending
            self.pending = None
        elif e.kind == EventKind.HAND_ENDED:
            reason, side, points = d["reason"], d["winner_team"], d["points"]
            if reason == "all_tied_redeal":
                assert side is None and points == 0
            elif reason == "eleven_refused":
                assert points == r.hand_of_eleven_refusal
            elif (self.special == "iron" and reason in ("tricks", "all_tied_mano", "folded")) or (
                self.value == GAME and reason != "declined"  # joc fora accepted
            ):
                assert points == r.target_points - self.scores[side]
            else:
                assert points == self.value, (reason, points, self.value)
            if side is not None:
                for x in self.holders(side, teams):
                    self.expected[x] += points
        elif e.kind == EventKind.BET_WON:
            for x in self.holders(d["winner_team"], teams):
                self.expected[x] += d["points"]
        elif e.kind == EventKind.SCORE_CHANGED:
            self.scores = list(d["scores"])
        elif e.kind == EventKind.MATCH_ENDED:
            self.close()


# ------------------------------------------------------------------------- no leak
def _cards_in(value: Any, deck: frozenset[str]) -> Iterator[str]:
    if isinstance(value, str):
        if value in deck:
            yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _cards_in(v, deck)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _cards_in(v, deck)


class Knowledge:
    """Which cards each seat (and a spectator, key ``None``) may know in the current hand,
    derived from the rules, not from the events' redaction marks."""

    def __init__(self, rules: RuleSet) -> None:
        self.r = rules
        self.viewers: list[int | None] = [*range(rules.players), None]
        self.known: dict[int | None, set[str]] = {v: set() for v in self.viewers}
        self.eleven_side: int | None = None
        self.special: str | None = None
        self.bet_winners: set[tuple[int, str]] = set()

    def new_hand(self, state: MatchState) -> None:
        self.known = {v: set() for v in self.viewers}
        self.bet_winners = set()
        h = state.hand
        assert h is not None
        at = self.r.hand_of_eleven_at
        on = [s for s in range(self.r.sides) if at is not None and state.scores[s] >= at]
        self.eleven_side = on[0] if len(on) == 1 else None
        self.side_of = h.side_of

    def side(self, seat: int) -> int:
        return self.side_of[seat]

    def learn(self, e: Event) -> None:
        d = data(e)
        k = e.kind
        if k == EventKind.HAND_STARTED:
            self.special = d.get("special")
            if d["turn_up"] is not None:
                for v in self.viewers:
                    self.known[v].add(d["turn_up"])
        elif k == EventKind.CARDS_DEALT:
            if self.special != "iron":
                self.known[d["seat"]].update(d["cards"])
            if self.special == "eleven" and self.side(d["seat"]) == self.eleven_side:
                for v in range(self.r.players):
                    if self.side(v) == self.eleven_side:
                        self.known[v].update(d["cards"])
        elif k == EventKind.CARD_PLAYED:
            if d["face_down"]:
                self.known[d["seat"]].add(d["card"])
            else:
                for v in self.viewers:
                    self.known[v].add(d["card"])
        elif k == EventKind.BET_WON:
            self.bet_winners.add((d["winner_team"], d["family"]))
        elif k == EventKind.CARDS_REVEALED and d["public"]:
            # the winning side shows the cards that made its points
            assert (self.side(d["seat"]), d["reason"]) in self.bet_winners, d
            for v in self.viewers:
                self.known[v].update(d["cards"])


def _observation_cards(o: Any) -> list[str]:
    out = list(o.hand) + [c for cs in o.revealed.values() for c in cs]
    out += [p.card for t in o.tricks for p in t.plays if p.card is not None]
    if o.turn_up:
        out.append(o.turn_up)
    out += [a.card for a in o.legal_actions if a.card is not None]
    return out


def every_move_asked(state: MatchState, seat: int) -> tuple[Action, ...]:
    """The legal set asking every action kind's rule, whatever the situation: the same as
    :func:`legal_actions`, which asks only the kinds possible in the seat's situation."""
    if state.phase != "play" or state.hand is None:
        return ()
    c = Ctx(state, state.hand, seat)
    return tuple(a for m in MOVES.values() for a in m.candidates(c) if m.can(c, a))


def check_match(rules: RuleSet, seed: int, start: MatchState | None) -> MatchState:
    """Play one random match and check every property along the way."""
    deck = frozenset(rules.deck_cards)
    values = ValueTracker(rules)
    if start is not None:
        values.scores = list(start.scores)
    kn = Knowledge(rules)
    rng = random.Random(seed ^ 0x5EED)
    last = None
    out: set[int] = set()  # seats that folded alone this (sub-)hand
    for before, events, after in play(rules, seed, start):
        last = after
        assert events and before != after
        _track_out(events, out)
        for seat in out:
            assert not legal_actions(after, seat) and observe(after, seat).hand == ()
        for e in events:
            values.feed(e, seat_teams(after))
            if e.kind == EventKind.HAND_STARTED:
                kn.new_hand(after)
            kn.learn(e)
            for v in kn.viewers:
                seen = set(_cards_in(data(e.redact(v)), deck))
                assert seen <= kn.known[v], ("leak in event", v, e.to_dict(), seen - kn.known[v])
            assert Event.from_dict(e.to_dict()) == e
        full = rng.random() < 0.1
        for v in kn.viewers:
            o = observe(after, v)
            seen = set(_observation_cards(o))
            if full:  # every field of the serialized observation, now and then
                seen |= set(_cards_in(o.to_dict(), deck))
            assert seen <= kn.known[v], ("leak in observation", v, seen - kn.known[v])
            if v is not None and (full or v in o.awaited):  # the seat's own set, awaited or not
                assert o.legal_actions == tuple(legal_actions(after, v))
                assert o.awaited == to_act(after)
                if full:
                    assert o.legal_actions == every_move_asked(after, v)
            if kn.special == "iron" and after.phase == "play":
                assert o.hand == ()
        if full:
            _check_json_round_trip(rules, after)
    values.close()
    assert last is not None and last.phase == "over" and last.winner is not None
    assert max(last.games) == rules.games_to_win
    return last


def _track_out(events: list[Event], out: set[int]) -> None:
    """Keep ``out``, the seats that folded alone in the (sub-)hand in progress, up to date."""
    kinds = [e.kind for e in events]
    if EventKind.HAND_STARTED in kinds or EventKind.HEAD_TO_HEAD_STARTED in kinds:
        out.clear()
    if EventKind.HAND_ENDED in kinds or EventKind.GAME_ENDED in kinds:
        out.clear()
    elif EventKind.FOLDED in kinds:  # the hand goes on: the seat folded alone
        out.update(data(e)["seat"] for e in events if e.kind == EventKind.FOLDED)


def _check_json_round_trip(rules: RuleSet, state: MatchState) -> None:
    back = state_from_json(state_to_json(state))
    assert back == state
    bare = state.to_dict(rules=False)  # what a store keeping the rules beside the state holds
    assert "rules" not in bare and MatchState.from_dict(bare, rules) == state
    with pytest.raises(RecordError):  # without the rules it is no state
        MatchState.from_dict(bare)
    if back.phase == "play":  # the rebuilt state behaves the same
        seat = to_act(back)[0]
        legal = legal_actions(state, seat)
        assert legal_actions(back, seat) == legal
        assert apply(back, seat, legal[-1])[0] == apply(state, seat, legal[-1])[0]
    elif back.phase == "deal":
        deck = list(rules.deck_cards)
        assert deal(back, deck)[0] == deal(state, deck)[0]


@pytest.mark.parametrize(("preset", "players"), CASES, ids=IDS)
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_random_match_ends_scores_right_leaks_nothing_and_replays(preset, players, seed):
    """From a new match: ends, each hand pays its value, no leak, JSON round-trips, and
    ``replay(record)`` equals the live state."""
    rules = get_rules(preset, players=players)
    assert type(rules).from_dict(rules.to_dict()) == rules
    last = check_match(rules, seed, None)
    record: MatchRecord = play.last_record  # type: ignore[attr-defined]
    assert replay(record) == last
    again = MatchRecord.from_json(record.to_json())
    assert again.to_dict() == record.to_dict()
    assert replay(again) == last


@pytest.mark.parametrize(("preset", "players"), CASES, ids=IDS)
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_random_match_from_random_scores(preset, players, seed):
    """From random scores below the target (hands of eleven and iron hands come up often):
    ends, each hand pays its value, no leak, JSON round-trips."""
    rules = get_rules(preset, players=players)
    check_match(rules, seed, near_end(rules, random.Random(seed)))


@pytest.mark.parametrize(("preset", "players"), HOUSE_CASES, ids=HOUSE_IDS)
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_random_match_with_every_house_rule(preset, players, seed):
    """Every house rule the preset can take switched on: from a new match and from random
    scores, the same properties, and ``replay(record)`` equals the live state."""
    rules = with_house_rules(get_rules(preset, players=players))
    assert type(rules).from_dict(rules.to_dict()) == rules
    last = check_match(rules, seed, None)
    assert replay(play.last_record) == last  # type: ignore[attr-defined]
    check_match(rules, seed, near_end(rules, random.Random(seed)))


def test_house_cases_switch_every_house_rule_on():
    on = set().union(*(house_fields(with_house_rules(get_rules(n, players=p))) for n, p in HOUSE_CASES))
    assert on == set(HOUSE_RULES)
    assert house_fields(with_house_rules(get_rules("argentine-4p"))) == set(HOUSE_RULES)


def test_cases_cover_the_brazilian_tables():
    ids = set(IDS)
    for case in ("paulista-2p", "paulista-4p", "paulista-6p", "mineiro-2p", "mineiro-4p", "manilha-velha-4p"):
        assert case in ids


def test_turn_up_is_public_when_the_ranking_uses_one():
    rules = get_rules("paulista-2p")
    assert rules.ranking in USES_TURN_UP

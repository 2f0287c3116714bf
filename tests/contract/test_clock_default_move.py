"""A seat that lets its clock run out never gains by it (docs/lifecycle.md, "What the clock
plays"; :mod:`truco_match.timeout`).

* The reported case: Argentine to 3 points, a 2 s clock, both seats joined and never moved --
  the clock sang a mandatory flor for a seat, which scored 3 and won the match. Run through
  the match's steps (``clock.due_step``) with the time passed in, for a seat whose clock runs
  out, one that is away (no clock, a disconnect grace) and a clock that forfeits.
* A property over random reachable states of every preset, at every table size it allows
  (and with the house rules, and with an optional flor): the clock's step for the awaited
  seat never calls, raises, accepts or declares, and what it scores for the seat's side
  (match, games, points) is no more than any legal alternative that settles the decision at
  once would (every answer, declaration, card and fold; a call or raise only hands the
  decision to the other side); where the seat had to sing a flor, it scores nothing and the
  flor is lost.
* Each flor decision on its own: on the seat's turn, as the answer to an envido and to a first
  truco of the other side, and as the answer to its own partner's envido (the decision passes
  on: a timeout without a move, kept in the record and replayed).
"""

from __future__ import annotations

import dataclasses
import os
import random
from collections.abc import Iterator, Sequence

import pytest

import truco_engine as te
from tests.helpers.house_rules import with_house_rules
from truco_engine.flor import flor_holders
from truco_match import clock, records, table
from truco_match.events import MatchForfeited, TimeoutCause, TurnTimedOut
from truco_match.lifecycle import Life, Lifecycle, TimeControl
from truco_match.timeout import PASSIVE, default_move

DECISIONS = int(os.environ.get("TRUCO_TIMEOUT_DECISIONS", "120"))
"""Decisions checked per starting position of each case; raise it for a thorough run."""
CALLS = frozenset({"truco", "envido", "real_envido", "falta_envido", "contraflor", "contraflor_al_resto"})
"""Kinds that only put a decision to the other side (nothing is settled by them)."""
NOTHING = (False, 0, 0)


def _cases() -> list[tuple[str, te.RuleSet]]:
    out = []
    for name in te.preset_names():
        for n in range(2, 13):
            try:
                rules = te.get_rules(name, players=n)
            except te.InvalidRulesError:
                continue
            out.append((f"{name}-{n}p", rules))
            if n == te.get_rules(name).players:
                out.append((f"{name}-{n}p-house", with_house_rules(rules)))
    out.append(("argentine-2p-optional-flor", te.get_rules("argentine", flor_mandatory=False)))
    out.append(("argentine-4p-optional-flor", te.get_rules("argentine-4p", flor_mandatory=False)))
    return out


CASES = _cases()


def scored(before: te.MatchState, after: te.MatchState, side: int) -> tuple[bool, int, int]:
    """What ``side`` scored from ``before`` to ``after``, read from the states: (won the
    match, games won, points -- in the same game)."""
    games = after.games[side] - before.games[side]
    same_game = list(after.games) == list(before.games)
    points = max(0, after.scores[side] - before.scores[side]) if same_game else 0
    return after.winner == side and before.winner != side, games, points


def clocked(rules: te.RuleSet, **lc: int) -> table.Setup:
    tc = TimeControl(per_decision=1000)
    return table.Setup(rules=rules, seed=b"timeout property", lifecycle=Lifecycle(time_control=tc, **lc))


def awaiting(state: te.MatchState) -> Life:
    """The lifecycle of a started match whose clock runs for the awaited decision since 0."""
    n = state.rules.players
    return Life(
        joined=[True] * n,
        started=True,
        expiries=[0] * n,
        decision=state.actions,
        awaited=te.to_act(state)[0],
        since=0,
        timed=True,
        allowance=1000,
    )


def starts(rules: te.RuleSet) -> list[te.MatchState]:
    """Starting positions: a new match, and reachable scores near the end (one side, every
    side: the hand of eleven and the iron hand where played)."""
    near = rules.hand_of_eleven_at if rules.hand_of_eleven_at is not None else rules.target_points - 1
    sides = rules.sides
    out = []
    for scores in ([0] * sides, [near] + [0] * (sides - 1), [0] * (sides - 1) + [near], [near] * sides):
        d = te.new_match(rules).to_dict()
        d["scores"] = scores
        out.append(te.MatchState.from_dict(d))
    return out


def walk(
    rules: te.RuleSet, start: te.MatchState, rng: random.Random, setup: table.Setup
) -> Iterator[te.MatchState]:
    """:data:`DECISIONS` random reachable states awaiting a decision, from ``start`` (again
    when a match ends): random deals (with a flor dealt to somebody every other hand, where
    flor is played), random legal moves, and now and then the clock's own step."""
    state, deck, seen = start, list(rules.deck_cards), 0
    while seen < DECISIONS:
        if te.is_over(state):
            state = start
        if te.needs_deal(state):
            for _ in range(30):
                rng.shuffle(deck)
                dealt, _ = te.deal(state, deck)
                assert dealt.hand is not None
                if not rules.flor or rng.random() < 0.5 or flor_holders(rules, dealt.hand):
                    break
            state = dealt
            continue
        seen += 1
        yield state
        seat = te.to_act(state)[0]
        if rng.random() < 0.3:
            step = table.expire(setup, state, awaiting(state), TimeoutCause.CLOCK, 1000)
            assert step is not None
            state = step.state
        else:
            state, _ = te.apply(state, seat, rng.choice(te.legal_actions(state, seat)))


def check_timeout(setup: table.Setup, state: te.MatchState, cause: TimeoutCause) -> None:
    """The invariant at one state (module doc)."""
    seat = te.to_act(state)[0]
    side = te.seat_teams(state)[seat]
    legal = te.legal_actions(state, seat)
    step = table.expire(setup, state, awaiting(state), cause, 1000)
    assert step is not None
    timed = step.entries[0]
    assert isinstance(timed, TurnTimedOut) and timed.seat == seat and timed.cause is cause
    move = timed.action
    assert move is None or move.kind in PASSIVE, f"the clock played {move} from {legal}"
    got = scored(state, step.state, side)
    for a in legal:
        if a.kind not in CALLS:
            other = scored(state, te.apply(state, seat, a)[0], side)
            assert got <= other, f"the clock's {move} scores {got}, {a.text()} only {other}; legal: {legal}"
    forced_flor = state.rules.flor_mandatory and [a.kind for a in legal] == ["flor"]
    if forced_flor:
        assert got == NOTHING
        h, was = step.state.hand, state.hand
        assert h is not None and was is not None
        if (h.number, h.order) == (was.number, was.order):  # the same hand (or head-to-head)
            assert seat in h.flor_void and seat not in h.flor_sung
    if move is None:
        assert forced_flor and te.to_act(step.state) != (seat,)


@pytest.mark.parametrize(("case", "rules"), CASES, ids=[c for c, _ in CASES])
def test_a_timeout_never_scores_more_than_any_settling_alternative(case: str, rules: te.RuleSet) -> None:
    rng = random.Random(case)
    setup = clocked(rules, disconnect_grace=1000)
    checked = 0
    for start in starts(rules):
        for state in walk(rules, start, rng, setup):
            cause = TimeoutCause.CLOCK if checked % 2 else TimeoutCause.DISCONNECTED
            check_timeout(setup, state, cause)
            checked += 1
    assert checked == 4 * DECISIONS


# ---------------------------------------------------------------- the reported case
def _never_moving(
    setup: table.Setup, *, away: bool
) -> Iterator[tuple[te.MatchState, table.Step, records.RecordStep]]:
    """Both seats join, then nobody ever moves: (state before, step, record entry) of every
    step the match's clock makes due, with the time passed in (``away``: the seats have no
    stream, so each awaited seat counts as away from its decision's start)."""
    rules = setup.rules
    step = table.start(setup, table.seats_of(rules), now=0)
    for seat in range(rules.players):
        step = table.join(setup, step.state, step.life, seat, b"", 10 + seat)
    for _ in range(500):
        if te.is_over(step.state):
            return
        due = clock.next_wake(setup, step.state, step.life, 0)
        assert due is not None
        life = step.life
        away_ms = due - life.since if away and clock.presence_matters(setup, life, due) else None
        made = clock.due_step(setup, step.state, life, due, away_ms)
        assert made is not None, "nothing was due at the wake-up"
        nxt, record, _ = made
        yield step.state, nxt, record
        step = nxt
    raise AssertionError("the match did not end")


FLOR_FIRST = b"flor 0"
"""A seed whose first deal gives the mano (seat 0) a flor at Argentine, 2 players."""


@pytest.mark.parametrize(
    ("how", "clock_ms", "grace_ms", "cause"),
    [
        ("present, its clock runs out", 2000, 0, records.StepCause.CLOCK),
        ("away, no clock", 0, 2000, records.StepCause.DISCONNECTED),
        ("away before its clock runs out", 2000, 1000, records.StepCause.DISCONNECTED),
    ],
)
def test_the_reported_case_a_silent_flor_holder_neither_scores_nor_wins(
    how: str, clock_ms: int, grace_ms: int, cause: records.StepCause
) -> None:
    """Argentine to 3, both seats joined and silent: the mano holds a flor. His first timeout
    used to sing it (3 points: the match won); now the flor is lost, a card is played, and
    no timeout of either seat scores for its own side."""
    rules = te.get_rules("argentine", target_points=3)
    tc = TimeControl(per_decision=clock_ms) if clock_ms else None
    lc = Lifecycle(time_control=tc, join_window=60_000, disconnect_grace=grace_ms)
    setup = table.Setup(rules=rules, seed=FLOR_FIRST, lifecycle=lc)
    steps = list(_never_moving(setup, away=bool(grace_ms)))
    before, first, record = steps[0]
    assert before.hand is not None and te.legal_actions(before, 0) == [te.Action("flor")]
    timed = first.entries[0]
    assert isinstance(timed, TurnTimedOut) and timed.seat == 0 and record.cause is cause
    assert timed.action is not None and timed.action.kind == "play"
    assert first.state.scores == [0, 0] and not te.is_over(first.state)
    assert first.state.hand is not None and 0 in first.state.hand.flor_void
    for before, step, record in steps:
        timed = step.entries[0]
        assert isinstance(timed, TurnTimedOut) and record.cause is cause
        assert timed.action is not None and timed.action.kind in ("play", "decline", "fold")
        side = te.seat_teams(before)[timed.seat]
        assert scored(before, step.state, side) == NOTHING, f"{timed} scored for its own side"
    assert te.is_over(steps[-1][1].state)


def test_the_forfeit_still_comes_first_for_a_silent_flor_holder() -> None:
    rules = te.get_rules("argentine", target_points=3)
    lc = Lifecycle(time_control=TimeControl(per_decision=2000, forfeit_after=1), join_window=60_000)
    setup = table.Setup(rules=rules, seed=FLOR_FIRST, lifecycle=lc)
    steps = list(_never_moving(setup, away=False))
    assert len(steps) == 1
    _, step, record = steps[0]
    assert record.forfeit is not None and record.forfeit.seat == 0
    assert [type(e) for e in step.entries[:2]] == [TurnTimedOut, MatchForfeited]
    assert step.state.winner == 1 and step.state.scores == [0, 0]


# ------------------------------------------------------------ each flor decision
SUITS = "ebco"


def flor_deal(rules: te.RuleSet, hands: Sequence[Sequence[str]]) -> tuple[str, ...]:
    """A deck order dealing ``hands`` (seat 0 is the first hand's mano; one card a seat, in
    play order, three rounds), the rest of the deck after them."""
    n = rules.players
    deck = [hands[i % n][i // n] for i in range(3 * n)]
    return (*deck, *(c for c in rules.deck_cards if c not in deck))


def flor_match(preset: str, hands: Sequence[Sequence[str]]) -> tuple[table.Setup, table.Step]:
    rules = te.get_rules(preset)
    deck = flor_deal(rules, hands)
    lc = Lifecycle(time_control=TimeControl(per_decision=1000))
    setup = table.Setup(rules=rules, seed=b"flor decisions", deck_orders=(deck,), lifecycle=lc)
    return setup, table.start(setup, table.seats_of(rules), now=0)


def act(setup: table.Setup, step: table.Step, seat: int, kind: str, now: int) -> table.Step:
    return table.act(setup, step.state, step.life, seat, te.Action(kind), now)


def expire(setup: table.Setup, step: table.Step, now: int) -> table.Step:
    done = table.expire(setup, step.state, step.life, TimeoutCause.CLOCK, now)
    assert done is not None
    return done


NO_FLOR = ["1e", "4b", "7o"]
OTHER_NO_FLOR = ["2e", "5b", "6c"]
A_FLOR = ["3c", "5c", "7c"]


def test_a_flor_not_sung_on_the_seats_turn_is_lost_and_its_weakest_card_played() -> None:
    setup, step = flor_match("argentine", [A_FLOR, NO_FLOR])
    assert te.legal_actions(step.state, 0) == [te.Action("flor")]
    done = expire(setup, step, 1000)
    timed = done.entries[0]
    assert isinstance(timed, TurnTimedOut) and timed.action == te.Action("play", "5c")
    assert done.state.scores == [0, 0] and 0 in done.state.hand.flor_void  # type: ignore[union-attr]
    # the lost flor never counts: seat 1 calls envido, seat 0 answers it like anyone else
    called = act(setup, done, 1, "envido", 1500)
    assert called.life.awaited == 0 and te.Action("flor") not in te.legal_actions(called.state, 0)


def test_a_flor_holder_answering_an_envido_loses_the_flor_and_declines() -> None:
    setup, step = flor_match("argentine", [NO_FLOR, A_FLOR])
    called = act(setup, step, 0, "envido", 100)
    assert called.life.awaited == 1 and te.legal_actions(called.state, 1) == [te.Action("flor")]
    done = expire(setup, called, 1100)
    assert done.entries[0] == TurnTimedOut(
        seat=1, cause=TimeoutCause.CLOCK, action=te.Action("decline"), expiries=1
    )
    assert done.state.scores == [1, 0]  # the envido's refusal; the flor (3) is nobody's


def test_a_flor_holder_answering_a_first_truco_loses_the_flor_and_declines() -> None:
    setup, step = flor_match("argentine", [NO_FLOR, A_FLOR])
    called = act(setup, step, 0, "truco", 100)
    assert te.legal_actions(called.state, 1) == [te.Action("flor")]
    done = expire(setup, called, 1100)
    timed = done.entries[0]
    assert isinstance(timed, TurnTimedOut) and timed.action == te.Action("decline")
    assert done.state.scores == [1, 0]


def test_a_partner_who_had_to_sing_over_the_envido_passes_it_to_the_other_side() -> None:
    """Argentine, 4 players, ``partner_flor="first"``: seat 0 calls envido and his partner,
    seat 2, holding flor, must sing it first. Silent, his flor is lost and the envido goes to
    the seat that answers it without the flor (seat 1): a timeout without a move, in the
    record as such, replayed to the same log."""
    setup, step = flor_match("argentine-4p", [NO_FLOR, OTHER_NO_FLOR, A_FLOR, ["1b", "4o", "6e"]])
    called = act(setup, step, 0, "envido", 100)
    assert called.life.awaited == 2 and te.legal_actions(called.state, 2) == [te.Action("flor")]
    made = clock.due_step(setup, called.state, called.life, 1100)
    assert made is not None
    done, record, status = made
    assert status is None and done.entries == [
        TurnTimedOut(seat=2, cause=TimeoutCause.CLOCK, action=None, expiries=1)
    ]
    assert done.state.scores == [0, 0] and te.to_act(done.state) == (1,)
    assert done.life.awaited == 1 and done.life.deadline() == 1100 + 1000
    pending = te.observe(done.state, 1).pending
    assert pending is not None and pending.name == "envido" and pending.responder == 1
    assert record.timeout is not None and record.action is None and record.forfeit is None

    # the record keeps it and replays it to the same log
    created = 1_767_000_000.0
    v_called = len(step.entries) + len(called.entries)
    steps = [
        records.RecordStep(version=v_called, time=created + 0.1, seat=0, action=te.Action("envido")),
        dataclasses.replace(record, version=v_called + len(done.entries), time=created + 1.1),
    ]
    packed = [records.unpack_step(records.pack_step(s, created), created) for s in steps]
    assert packed == steps
    replayed = list(records.replay(setup, table.seats_of(setup.rules), packed, created))
    assert replayed[-1].entries == done.entries and replayed[-1].state == done.state


def test_without_mandatory_flor_the_clock_never_sings_and_the_flor_stays() -> None:
    rules = te.get_rules("argentine", flor_mandatory=False)
    deck = flor_deal(rules, [A_FLOR, NO_FLOR])
    setup = table.Setup(
        rules=rules,
        seed=b"optional flor",
        deck_orders=(deck,),
        lifecycle=Lifecycle(time_control=TimeControl(per_decision=1000)),
    )
    step = table.start(setup, table.seats_of(rules), now=0)
    assert te.Action("flor") in te.legal_actions(step.state, 0)
    done = expire(setup, step, 1000)
    timed = done.entries[0]
    assert isinstance(timed, TurnTimedOut) and timed.action == te.Action("play", "5c")
    assert done.state.scores == [0, 0] and done.state.hand.flor_void == ()  # type: ignore[union-attr]


def test_the_engine_refuses_to_drop_a_flor_nobody_must_sing() -> None:
    _, step = flor_match("argentine", [NO_FLOR, A_FLOR])
    for seat in (0, 1):  # seat 0 holds none; seat 1 is not awaited
        with pytest.raises(te.IllegalActionError):
            te.forgo_flor(step.state, seat)
    assert default_move(step.state, 0).action == te.Action("play", "4b")

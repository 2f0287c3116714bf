"""Match records made in-process through the contract's table (the functions the server
commits), for fast checks of ``truco verify`` and the docs verifier over every preset.

The server builds its records the same way (one :class:`RecordStep` per commit, the hands
from the ``hand_started`` events, the reveal as the last event); the e2e tests in this
directory check records a real worker made."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence

import truco_engine as te
from truco_match import clock, records, table
from truco_match.events import DealSource, MatchRevealed, MatchStatus, SeatJoined
from truco_match.lifecycle import Lifecycle, TimeControl
from truco_match.matches import MatchInfo, MatchResult

CREATED_AT = 1_767_000_000.25


def play_record(
    rules: te.RuleSet,
    rng: random.Random,
    *,
    seed: bytes = b"s" * 32,
    source: DealSource = DealSource.SERVER_SEED,
    deck_orders: Sequence[Sequence[str]] = (),
    creator_seed: bytes = b"",
    join_seeds: Sequence[bytes] | None = None,
    max_actions: int = 5000,
    timeouts: float = 0.0,
) -> records.MatchRecord:
    """A whole match of random legal actions (``fold`` avoided, so matches last), as the
    finished record the server would give. ``join_seeds``: the seats join (a join window)
    with these client seeds, in seat order. ``timeouts``: the share of decisions left to a
    one-second clock, whose expiries (``clock.due_step``) make the move."""
    tc = TimeControl(per_decision=1000) if timeouts else None
    lc = Lifecycle(join_window=60_000 if join_seeds is not None else 0, time_control=tc)
    setup = table.Setup(
        rules=rules,
        seed=seed,
        deck_orders=tuple(tuple(d) for d in deck_orders),
        source=source,
        lifecycle=lc,
    )
    seats = table.seats_of(rules)
    first = table.start(setup, seats, creator_seed, 0)
    state, life = first.state, first.life
    entries = list(first.entries)
    steps: list[records.RecordStep] = []
    now = 0

    def commit(done: table.Step, step: records.RecordStep) -> None:
        nonlocal state, life
        entries.extend(done.entries)
        state, life = done.state, done.life
        steps.append(
            dataclasses.replace(
                step, version=len(entries), time=CREATED_AT + now / 1000, clock_ms=done.clock_ms
            )
        )

    for seat, cs in enumerate(join_seeds or ()):
        now += 250
        joined = table.join(setup, state, life, seat, cs, now)
        commit(
            joined,
            records.RecordStep(version=0, time=0.0, seat=seat, join=SeatJoined(seat=seat, client_seed=cs)),
        )
    while not te.is_over(state) and len(steps) < max_actions:
        end = life.deadline()
        if end is not None and rng.random() < timeouts:
            now = max(now, end)
            made = clock.due_step(setup, state, life, now)
            assert made is not None
            commit(made[0], made[1])
            continue
        seat = te.to_act(state)[0]
        legal = te.legal_actions(state, seat)
        action = rng.choice([a for a in legal if a.kind != "fold"] or legal)
        now += rng.randrange(50, 5000)
        if end is not None:
            now = min(now, end - 1)  # in time: the clock has not moved for it
        commit(
            table.act(setup, state, life, seat, action, now),
            records.RecordStep(version=0, time=0.0, seat=seat, action=action),
        )
    assert te.is_over(state), "the match did not end"
    reveal = entries[-1]
    assert isinstance(reveal, MatchRevealed)
    info = MatchInfo(
        match_id="m-local",
        state=MatchStatus.FINISHED,
        rules=rules,
        seats=seats,
        version=len(entries),
        created_at=CREATED_AT,
        updated_at=steps[-1].time,
        result=MatchResult(
            winner_team=state.winner or 0, scores=tuple(state.scores), games_won=tuple(state.games)
        ),
        lifecycle=lc,
        fairness=setup.fairness(life),
    )
    return records.MatchRecord(
        match=info, hands=tuple(records.hands_of(entries, 1)), steps=tuple(steps), reveal=reveal
    )

"""The ladder of built-in bots (truco_bots.levels) and its table (truco_bots.ladder): every level
plays legally in every preset family; the beginners' mistakes are the only difference from
``rules`` and they cost in the River Plate game too; level 6 weighs its worlds by what the
other seats did and level 5 makes the same search at half of its decisions; one decision is a
function of the observation and the seed; the ladder's command plays its pairs and prints the
table."""

from __future__ import annotations

import argparse
import random
from typing import Any

import pytest

import truco_engine as te
from truco_bots import RulesBot, ladder
from truco_bots.heuristics import hand_power, percentiles
from truco_bots.ladder import add_arguments, cpu_figures, pairs, run
from truco_bots.levels import LEVELS, Beginner, LevelBot, Sometimes, decide, level_bot
from truco_bots.mcts_bot import MctsBot
from truco_client.local import run_local
from truco_kit.actions import Action
from truco_kit.observation import Observation

FAMILIES = ("paulista-2p", "mineiro", "argentine", "uruguayan")
"""Brazilian (2 and 4 players), River Plate and Uruguayan presets."""


@pytest.mark.parametrize("preset", FAMILIES)
@pytest.mark.parametrize("level", list(LEVELS))
def test_every_level_plays_legally_in_every_family(level: int, preset: str) -> None:
    class Level(LevelBot):
        name = f"level{level}"

        def __init__(self, seed: int | None = None) -> None:
            super().__init__(seed, level, cpu_ms=20)

    n = 2 if level >= 5 else 6
    res = run_local([Level, RulesBot], preset, n, seed=level, strict=True)
    assert res.matches == n and res.illegal == 0


def _decisions(bot_of_seat: int, preset: str = "argentine", matches: int = 30) -> list[Observation]:
    """Observations of seat 0 with a choice, from matches of ``rules`` against itself."""
    seen: list[Observation] = []

    class Recorder(RulesBot):
        def choose(self, observation: Observation) -> te.Action:
            if observation.seat == bot_of_seat and len(observation.legal_actions) > 1:
                seen.append(observation)
            return super().choose(observation)

    run_local([Recorder], preset, matches, seed=5)
    return seen


def test_beginners_err_more_the_lower_the_level_and_level_4_is_rules() -> None:
    observations = _decisions(0)
    assert len(observations) > 100
    differ = {}
    for level in (1, 2, 3, 4):
        n = 0
        for i, o in enumerate(observations):
            rules = RulesBot(i).choose(o)
            mine, _ = decide(level, o, i)
            n += mine != rules
        differ[level] = n / len(observations)
    assert differ[4] == 0.0
    assert differ[1] > differ[2] > differ[3] > 0.0, differ


def test_a_beginners_mistakes_are_a_persons() -> None:
    """Every call answered "quiero" (where ``rules`` declines too), the best card led."""
    observations = _decisions(0, matches=60)
    declined = [o for o in observations if o.pending is not None and RulesBot(1).choose(o).kind == "decline"]
    assert {o.pending.kind for o in declined if o.pending} >= {"truco", "envido"}
    assert all(Beginner(i, mistakes=1.0).choose(o).kind == "accept" for i, o in enumerate(declined))
    leads = [o for o in observations if o.pending is None and o.can("play") and len(o.my_cards) == 3]
    leads = [o for o in leads if o.current_trick is None or not o.current_trick.plays]
    assert len(leads) > 10
    for i, o in enumerate(leads):
        assert o.rules is not None
        pct = percentiles(o.rules, o.turn_up)
        played = Beginner(i, mistakes=1.0).choose(o)
        if played.kind == "play":
            assert pct[played.card or ""] == max(pct[c] for c in o.my_cards)


@pytest.mark.parametrize("preset", ["argentine", "paulista-2p"])
def test_the_beginner_levels_are_apart_in_both_families(preset: str) -> None:
    """The mistakes cost in the River Plate game as in the Brazilian one (random slips did not
    in argentine: levels 1 to 4 were within 44-50 % of each other there)."""

    def level(n: int) -> type[LevelBot]:
        class Level(LevelBot):
            def __init__(self, seed: int | None = None) -> None:
                super().__init__(seed, n)

        return Level

    res = run_local([level(3), level(1)], preset, 200, seed=3, strict=True)
    assert res.win_rate(0) >= 0.62, res.summary()


def test_level_6_weighs_its_worlds_by_what_the_other_seat_did() -> None:
    """A world where the truco caller holds strong cards counts more: the weighted mean of
    the caller's hand power is above the plain mean of the same worlds."""
    observations = _decisions(0, matches=60)
    called = [o for o in observations if o.pending is not None and o.pending.kind == "truco"]
    assert len(called) >= 3
    bot = level_bot(6, seed=1).inner
    assert isinstance(bot, MctsBot) and bot.weigh
    lifted = 0
    for o in called[:6]:
        assert o.rules is not None and o.pending is not None
        caller = o.pending.by_seat
        pct = percentiles(o.rules, o.turn_up)
        weights, powers = [], []
        for _ in range(60):
            found = bot._world(o)
            assert found is not None
            world, weight = found
            assert world.hand is not None and caller is not None
            weights.append(weight)
            powers.append(hand_power([pct[c] for c in world.hand.dealt[caller]]))
        plain = sum(powers) / len(powers)
        weighted = sum(w * p for w, p in zip(weights, powers, strict=True)) / sum(weights)
        lifted += weighted > plain
    assert lifted >= len(called[:6]) - 1


def test_level_5_searches_as_level_6_at_half_of_its_decisions() -> None:
    observations = [o for o in _decisions(0, matches=40) if len(o.legal_actions) > 1]
    assert len(observations) >= 150
    searched = 0
    for i, o in enumerate(observations):
        bot = level_bot(5, seed=i).inner
        assert isinstance(bot, Sometimes) and bot.share == 0.5
        searcher = bot.searcher
        assert isinstance(searcher, MctsBot) and searcher.weigh and searcher.iterations == 600
        calls: list[Observation] = []

        def record(observation: Observation, calls: list[Observation] = calls) -> Action:
            calls.append(observation)
            return observation.legal_actions[-1]

        searcher.choose = record  # type: ignore[method-assign]
        action = bot.choose(o)
        if calls:
            searched += 1
            assert action == o.legal_actions[-1]
        else:
            assert action == RulesBot(i + 2).choose(o)
    assert 0.4 < searched / len(observations) < 0.6, searched
    level_6 = level_bot(6, seed=1).inner
    assert isinstance(level_6, MctsBot) and level_6.weigh and level_6.iterations == 600


def test_one_decision_is_a_function_of_the_observation_and_the_seed() -> None:
    observations = _decisions(0, matches=4)
    for level in (1, 5, 6):
        for i, o in enumerate(observations[:6]):
            first, cpu = decide(level, o, 1000 + i, cpu_ms=10_000)
            again, _ = decide(level, o, 1000 + i, cpu_ms=10_000)
            assert first == again and first in o.legal_actions and cpu >= 0.0


def test_level_bot_checks_its_level() -> None:
    with pytest.raises(ValueError, match="level must be 1 to 6"):
        level_bot(7)
    assert repr(level_bot(6)) == "LevelBot(level=6)"


def test_the_ladder_pairs_and_figures() -> None:
    assert pairs([1, 4, 6]) == [(1, "random"), (1, "rules"), (4, "level3"), (6, "level5"), (6, "rules")]
    assert pairs([4, 6], ["rules"]) == [(6, "rules")]
    assert pairs([5]) == [(5, "level4")]  # level 4 is rules: the same matches again
    assert pairs([5], ["rules"]) == [(5, "rules")]
    assert pairs([2], ["below"]) == [(2, "level1")]
    assert cpu_figures([]) == (0.0, 0.0)
    samples = [float(i) for i in range(1, 101)]
    assert cpu_figures(samples) == (50.5, 100.0)
    assert cpu_figures(random.Random(1).sample(samples, 100))[1] == 100.0


def test_the_ladder_command_prints_its_table(capsys: pytest.CaptureFixture[str]) -> None:
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert run(p.parse_args(["--preset", "argentine", "--level", "2", "--matches", "4"])) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| level | preset | against |")
    rows = [line.split(" | ") for line in lines[2:]]
    assert [(r[0], r[2], r[3]) for r in rows] == [("| 2", "level1", "4"), ("| 2", "rules", "4")]
    with pytest.raises(ValueError, match="the levels are 1 to 6"):
        run(p.parse_args(["--preset", "argentine", "--level", "9"]))


def test_the_ladder_prints_each_row_as_its_pair_finishes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of hours shows its table as it goes: when a pair starts, the rows of the pairs
    before it are printed already."""
    printed_before: list[str] = []
    real = ladder.play

    def watched(*args: Any, **kwargs: Any) -> ladder.Row:
        printed_before.append(capsys.readouterr().out)
        return real(*args, **kwargs)

    monkeypatch.setattr(ladder, "play", watched)
    p = argparse.ArgumentParser()
    add_arguments(p)
    assert run(p.parse_args(["--preset", "argentine", "--level", "2", "--matches", "2"])) == 0
    assert printed_before[0].startswith("| level | preset | against |")  # the header at once
    assert printed_before[1].startswith("| 2 | argentine | level1 | 2 |")  # the first row, then
    assert capsys.readouterr().out.startswith("| 2 | argentine | rules | 2 |")

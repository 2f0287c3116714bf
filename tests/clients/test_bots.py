"""Bot kit and built-in bots: in-process (local engine) and over a real worker."""

from __future__ import annotations

import random
import threading

import pytest

import truco_engine as te
from truco_bots import RandomBot, RulesBot, get_bot
from truco_bots.eval import evaluate, wilson
from truco_bots.mcts_bot import MctsBot, sample_world
from truco_client import Bot, Observation, TrucoClient
from truco_client.examples.high_card import HighCardBot
from truco_client.local import play_local_match, run_local
from truco_client.runner import run_bot
from truco_server.app.embedded import EmbeddedServer

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("preset", ["argentine", "paulista"])
def test_example_bot_finishes_100_matches_without_illegal_action(preset: str) -> None:
    result = run_local([HighCardBot, RandomBot], preset, n_matches=100, seed=11, strict=True)
    assert result.matches == 100 and result.illegal == 0
    assert sum(result.wins) == 100


@pytest.mark.parametrize(
    "preset",
    ["argentine", "paulista", "mineiro-2p", "uruguayan", "gaucho", "valencian", "carancho", "pica-pica"],
)
def test_builtin_bots_play_legally_everywhere(preset: str) -> None:
    result = run_local([RulesBot, RandomBot], preset, n_matches=6, seed=3, strict=True)
    assert result.illegal == 0 and result.matches == 6


def test_rules_beats_random() -> None:
    r = run_local([RulesBot, RandomBot], "argentine", n_matches=60, seed=5)
    assert r.wins[0] > r.wins[1]


@pytest.mark.parametrize("preset", ["argentine", "paulista"])
def test_mcts_plays_legally_and_searches(preset: str) -> None:
    bots: list[MctsBot] = []

    def make() -> MctsBot:
        b = MctsBot(seed=len(bots), iterations=40, time_limit=0.5)
        bots.append(b)
        return b

    r = run_local([make, RulesBot], preset, n_matches=2, seed=7, strict=True)
    assert r.illegal == 0
    searches = sum(b.searches for b in bots)
    fallbacks = sum(b.fallbacks for b in bots)
    assert searches > 0 and searches >= 5 * fallbacks


class _Probe(Bot):
    """Checks each determinized world against the observation (no hidden state used)."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(seed)
        self.checked = 0

    def choose(self, observation: Observation) -> te.Action:
        world = sample_world(observation, random.Random(self.checked))
        if world is not None and observation.seat is not None:
            assert world.hand is not None
            assert sorted(world.hand.cards[observation.seat]) == sorted(observation.my_cards)
            assert world.hand.turn_up == observation.turn_up
            assert set(te.legal_actions(world, observation.seat)) == set(observation.legal_actions)
            assert tuple(world.scores) == observation.scores
            self.checked += 1
        return self.rng.choice(observation.legal_actions)


def test_determinized_worlds_match_the_observation() -> None:
    probes = [_Probe(1), _Probe(2)]
    play_local_match(probes, te.get_rules("argentine"), random.Random(9))
    assert sum(p.checked for p in probes) > 20


def test_wilson_interval() -> None:
    lo, hi = wilson(50, 100)
    assert 0.40 < lo < 0.41 and 0.59 < hi < 0.60
    assert wilson(0, 0) == (0.0, 1.0)


def test_eval_runs_and_counts() -> None:
    r = evaluate("rules", "random", "argentine", 10, jobs=1, seed=2, progress=False)
    assert r.matches == 10 and r.wins_a + r.wins_b == 10 and r.illegal == 0


def test_get_bot_names() -> None:
    assert get_bot("random") is RandomBot and get_bot("mcts") is MctsBot
    with pytest.raises(ValueError):
        get_bot("nope")


def _play_over_server(address: str, bots: list[Bot], preset: str) -> Observation:
    with TrucoClient(address) as client:
        m = client.create_match(preset)
        results: list[Observation] = []
        threads = [
            threading.Thread(
                target=lambda b=b, t=t: results.append(run_bot(b, address, m.match_id, t)), daemon=True
            )
            for b, t in zip(bots, m.seat_tokens, strict=True)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert len(results) == len(bots)
        assert all(o.is_over for o in results)
        final = client.get_match(m.match_id, token=m.spectator_token)
        assert final.match.state == "finished"
        return results[0]


def test_bots_finish_matches_over_the_server(server: EmbeddedServer) -> None:
    warnings: list[str] = []

    class Strict(HighCardBot):
        def choose(self, observation: Observation) -> te.Action:
            a = super().choose(observation)
            if a not in observation.legal_actions:
                warnings.append(str(a))
            return a

    for k in range(3):
        _play_over_server(server.address, [Strict(k), RulesBot(k)], "argentine")
    searcher = MctsBot(1, iterations=30)
    _play_over_server(server.address, [searcher, RulesBot(2)], "argentine")
    # Over the network the observation carries the hand's events too: the search runs.
    assert searcher.searches > 0 and searcher.searches >= 5 * searcher.fallbacks
    _play_over_server(server.address, [RulesBot(1), RandomBot(2), RulesBot(3), RandomBot(4)], "paulista")
    assert not warnings


# ----------------------------------------------------------------- acting out of turn
def _out_of_turn_observation() -> Observation:
    """A paulista 2-player observation of the seat that is not to play but may call truco."""
    rules = te.get_rules("paulista", players=2)
    found: list[Observation] = []

    def seen(seat: int, obs: Observation, _events: object) -> None:
        if not found and obs.can_act and not obs.is_my_turn:
            found.append(obs)

    play_local_match([RulesBot(1), RulesBot(2)], rules, random.Random(3), on_update=seen)
    assert found, "paulista lets a seat call truco out of turn"
    return found[0]


def test_a_bot_is_asked_out_of_turn_and_declines_by_default() -> None:
    from truco_client.runner import _Seat

    obs = _out_of_turn_observation()
    assert obs.whose_turn != obs.seat and {a.kind for a in obs.legal_actions} == {"truco"}
    # RulesBot returns its only legal action when asked to choose: the runner must not ask it.
    assert _Seat(RulesBot(1), print, b"").decide(obs) is None

    class Caller(RulesBot):
        def out_of_turn(self, observation: Observation) -> te.Action | None:
            return observation.legal_actions[0]

    assert _Seat(Caller(1), print, b"").decide(obs) == te.Action("truco")


def test_network_play_is_the_local_simulation(server: EmbeddedServer) -> None:
    """The same bots, seeds and deals make the same moves over a worker as in-process (paulista,
    where truco may be called out of turn: a runner asking every bot whenever it had a legal
    action made RulesBot call it out of turn over the network only)."""
    seed = bytes(range(32))
    rules = te.get_rules("paulista", players=2)
    local: list[tuple[int, str]] = []

    class Logged(RulesBot):
        def choose(self, observation: Observation) -> te.Action:
            action = super().choose(observation)
            local.append((observation.seat or 0, action.text()))
            return action

    play_local_match([Logged(11), Logged(12)], rules, random.Random(0), seed=seed)
    with TrucoClient(server.address) as client:
        m = client.create_match("paulista", players=2, seed=seed)
        threads = [
            threading.Thread(
                target=run_bot, args=(RulesBot(11 + s), server.address, m.match_id, t), daemon=True
            )
            for s, t in enumerate(m.seat_tokens)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        record = client.get_match_record(m.match_id, token=m.spectator_token)
    online = [(s.seat, s.action.text()) for s in record.steps if s.action is not None]
    assert len(local) > 20
    assert online == local

"""Whole matches pinned by the goldens: each structural case's file must show what it is
recorded for (so a regenerated file cannot silently lose it), and every golden keeps the mano
and the dealer rotating hand after hand, across redeals and games.

The transcript of a golden is replayed and compared exactly by ``test_golden.py``; here the
same transcripts are read for their structure (spectator copies of the events)."""

from __future__ import annotations

import itertools
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from truco_engine import RuleSet
from truco_engine.variants import PICA_PICA_STOP, head_to_head_pairs

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
FILES = sorted(GOLDEN.glob("*.json"))


@cache
def load(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / name).read_text())


def events(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [e["public"] for step in data["transcript"] for e in step["events"]]


def of(data: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in events(data) if e["kind"] == kind]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_mano_and_the_dealer_rotate_every_hand(path):
    """Seed 000: "The deal passes to the next player after each hand"; seed 001: "a mão da
    primeiro turno é o pé do segundo" -- after scored hands, redeals and new games alike."""
    data = load(path.name)
    rules = RuleSet.from_dict(data["record"]["rules"])
    n = rules.players
    started = of(data, "hand_started")
    assert started[0]["dealer"] == n - 1 and started[0]["mano"] == 0
    for prev, nxt in itertools.pairwise(started):
        assert nxt["dealer"] == (prev["dealer"] + 1) % n
        assert nxt["mano"] == (nxt["dealer"] + 1) % n
        assert nxt["hand_number"] == prev["hand_number"] + 1


def test_best_of_three_games_seed_000():
    """Seed 000: "Many groups play best of three games. Each game won is marked separately,
    and the team that wins two takes the match." Three games here (1-1, then the decider);
    scores start again from 0 after each game."""
    data = load("paulista-best-of-3-2p-17.json")
    games = of(data, "game_ended")
    assert [g["game_number"] for g in games] == [1, 2, 3]
    assert sorted(games[1]["games_won"]) == [1, 1] and max(games[2]["games_won"]) == 2
    assert of(data, "match_ended")[0]["games_won"] == games[2]["games_won"]
    evs = events(data)
    for g in games[:2]:  # the first score of the next game counts from 0
        after = evs[evs.index(g) :]
        first = next(e for e in after if e["kind"] == "score_changed")
        assert sum(first["scores"]) <= max(RuleSet.from_dict(data["record"]["rules"]).truco_ladder)
    starts = of(data, "hand_started")
    assert {s["game_number"] for s in starts} == {1, 2, 3}


def test_redeal_after_three_tied_tricks_seed_000():
    """Seed 000: "Three tied tricks: at some tables nobody scores and the hand is dealt
    again." (paulista: ``all_tricks_tied="redeal"``). The hand ends with nobody scoring and
    the next hand is dealt by the next seat."""
    data = load("paulista-best-of-3-2p-17.json")
    evs = events(data)
    redeals = [i for i, e in enumerate(evs) if e["kind"] == "hand_ended" and e["reason"] == "all_tied_redeal"]
    assert redeals
    for i in redeals:
        assert evs[i]["winner_team"] is None and evs[i]["points"] == 0
        tricks = []
        j = i - 1
        while evs[j]["kind"] != "hand_started":
            if evs[j]["kind"] == "trick_ended":
                tricks.append(evs[j])
            j -= 1
        assert len(tricks) == 3 and all(t["tied"] for t in tricks)
        nxt = next(e for e in evs[i:] if e["kind"] == "hand_started")
        assert nxt["dealer"] == (evs[j]["dealer"] + 1) % 2
        assert not any(e["kind"] == "score_changed" for e in evs[j:i])


def test_malas_and_buenas_seed_001():
    """Seed 001: "São 24 pontos dividido em duas metades ... A primeira equipe que fizer 12
    pontos zera a pontuação e ela terá um ruins ... caso contrario a outra equipe também terá
    um ruins e quem vencer a próxima ganha a queda" -- gaúcho: games of 12, two to win; this
    match goes 1-1 and the third game decides."""
    data = load("gaucho-4p-1.json")
    rules = RuleSet.from_dict(data["record"]["rules"])
    assert (rules.target_points, rules.games_to_win) == (12, 2)
    games = of(data, "game_ended")
    assert len(games) == 3 and games[0]["winner_team"] != games[1]["winner_team"]
    assert sorted(games[1]["games_won"]) == [1, 1]
    final = data["final"]
    assert final["games"] == games[2]["games_won"] and final["winner"] == games[2]["winner_team"]


@pytest.mark.parametrize("name", ["pica-pica-6p-1.json", "pica-pica-8p-1.json"])
def test_pica_pica_alternates_team_hands_and_head_to_head_rounds_seed_001(name):
    """Seed 001: "as rodadas ímpares são jogadas em equipes e as rodadas pares são jogadas
    individualmente, somente os jogadores que estão de frente para o outro". Odd hands have
    no head-to-head sub-hand; even hands are rounds of one sub-hand per pair, in order, until
    a side is within 5 points of the target."""
    data = load(name)
    rules = RuleSet.from_dict(data["record"]["rules"])
    n = rules.players
    evs = events(data)
    starts = [i for i, e in enumerate(evs) if e["kind"] == "hand_started"] + [len(evs)]
    scores = [0, 0]
    rounds = 0
    for a, b in itertools.pairwise(starts):
        hand = evs[a]
        if hand["game_number"] > 1:
            break
        subs = [e for e in evs[a:b] if e["kind"] == "head_to_head_started"]
        pica = hand["hand_number"] % 2 == 0 and max(scores) < rules.target_points - PICA_PICA_STOP
        if not pica:
            assert subs == []
        else:
            rounds += 1
            pairs = head_to_head_pairs(n, hand["mano"])
            ended_early = any(e["kind"] == "game_ended" for e in evs[a:b])
            assert [tuple(s["seats"]) for s in subs] == list(pairs)[: len(subs)]
            assert len(subs) == n // 2 or ended_early
            assert [s["index"] for s in subs] == list(range(len(subs)))
        for e in evs[a:b]:
            if e["kind"] == "score_changed":
                scores = e["scores"]
    assert rounds >= 2


def test_game_over_in_the_middle_of_a_hand_on_an_accepted_falta_envido():
    """Seed 003: "the moment either player reaches 15, the match ends immediately -- even
    mid-round"; "a big Falta Envido can end things before a single trick has even been
    decided that round". The last step accepts a falta envido: the envido is declared and
    won, the game and the match end, and the hand never reaches its end."""
    data = load("argentine-falta-2p-64.json")
    last = [e["public"] for e in data["transcript"][-1]["events"]]
    kinds = [e["kind"] for e in last]
    assert data["transcript"][-1]["step"].endswith("accept")
    assert kinds[0] == "call_answered" and last[0]["family"] == "envido" and last[0]["accepted"]
    assert "points_declared" in kinds and "bet_won" in kinds
    assert "game_ended" in kinds and kinds[-1] == "match_ended"
    assert "hand_ended" not in kinds and "trick_ended" not in kinds
    calls = [e for e in events(data) if e["kind"] == "call_made" and e["family"] == "envido"]
    assert calls[-1]["name"] == "falta_envido"
    won = next(e for e in last if e["kind"] == "bet_won")
    assert data["final"]["scores"][won["winner_team"]] == 15
    assert data["final"]["hand"]["over"] and len(data["final"]["hand"]["tricks"]) <= 3


def test_carancho_changes_hands_and_discards_privately():
    """Seed 001: "os jogadores se revezam, formando duplas contra um jogador sozinho, o
    carancho ... O carancho sempre recebe a primeira carta e uma carta extra"."""
    data = load("carancho-3p-1.json")
    manos = [e["mano"] for e in of(data, "hand_started")]
    assert set(manos) == {0, 1, 2}
    steps = data["transcript"]
    discards = [e for step in steps for e in step["events"] if e["public"]["kind"] == "card_discarded"]
    assert len(discards) == len(manos)
    for d in discards:
        assert d["public"]["card"] is None  # nobody else sees the discard
        seat = d["public"]["seat"]
        assert d["private"][str(seat)]["card"] is not None

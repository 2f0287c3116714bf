"""Every River Plate preset and player count, and each with every house rule switched on:
random legal play ends, replays exactly, and no observation or redacted event shows a seat a
card it may not know. Rule options validate."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.helpers.events import data
from tests.helpers.house_rules import with_house_rules
from truco_engine import (
    EventKind,
    InvalidRulesError,
    Match,
    RuleSet,
    get_rules,
    house_rules,
    is_over,
    legal_actions,
    needs_deal,
    observe,
    replay,
    to_act,
)

PRESETS = [
    "argentine",
    "argentine-30",
    "uruguayan",
    "uruguayan-40",
    "gaucho",
    "valencian",
    "carancho",
    "pica-pica",
]


def _cases() -> list[tuple[str, RuleSet]]:
    out = []
    for name in PRESETS:
        for n in range(2, 13):
            try:
                out.append((f"{name}-{n}p", get_rules(name, players=n)))
            except InvalidRulesError:
                continue
    out += [
        ("argentine-free-flor", get_rules("argentine-4p", flor_mandatory=False, envido_with_flor=True)),
        ("argentine-mazo-point", get_rules("argentine", fold_concedes_envido=True)),
        ("gaucho-clean", get_rules("gaucho", clean_deck=True)),
        ("uruguayan-no-flor", get_rules("uruguayan", flor=False)),
        ("valencian-flor", get_rules("valencian", flor=True)),
    ]
    out += [(f"{name}-house", with_house_rules(get_rules(name))) for name in PRESETS]
    out += [
        (f"{name}-4p-house", with_house_rules(get_rules(name, players=4)))
        for name in ("argentine", "uruguayan")
    ]
    return out


CASES = _cases()


def _cards(obj: Any, deck: frozenset[str]) -> set[str]:
    if isinstance(obj, str):
        return {obj} if obj in deck else set()
    if isinstance(obj, dict):
        return set().union(*(_cards(v, deck) for v in obj.values())) if obj else set()
    if isinstance(obj, list | tuple):
        return set().union(*(_cards(v, deck) for v in obj)) if obj else set()
    return set()


@pytest.mark.parametrize(("label", "rules"), CASES, ids=[c[0] for c in CASES])
def test_random_play_ends_replays_and_leaks_nothing(label, rules):
    deck = frozenset(rules.deck_cards)
    for seed in range(6):
        rng = random.Random(seed)
        m = Match(rules)
        known: dict[int | None, set[str]] = {}
        viewers: list[int | None] = [*range(rules.players), None]
        steps = 0
        while not is_over(m.state):
            steps += 1
            assert steps < 5000, "the match did not end"
            if needs_deal(m.state):
                cards = list(rules.deck_cards)
                rng.shuffle(cards)
                events = m.deal(cards)
                known = {v: set() for v in viewers}
            else:
                seat = to_act(m.state)[0]
                legal = legal_actions(m.state, seat)
                assert legal
                events = m.act(seat, rng.choice(legal))
            for e in events:
                d = data(e)
                if e.kind == EventKind.HAND_STARTED and d["turn_up"]:
                    for v in viewers:
                        known[v].add(d["turn_up"])
                elif e.kind in (EventKind.CARDS_DEALT, EventKind.CARD_DISCARDED):
                    known[d["seat"]].update(d["cards"] if "cards" in d else [d["card"]])
                elif e.kind in (EventKind.CARD_PLAYED, EventKind.CARDS_REVEALED):
                    for v in viewers:
                        known[v].update(d["cards"] if "cards" in d else [d["card"]])
                for v in viewers:
                    seen = _cards(e.redact(v).to_dict(), deck)
                    assert seen <= known[v], (label, v, e.to_dict())
            for v in viewers:
                seen = _cards(observe(m.state, v).to_dict(), deck)
                assert seen <= known[v], (label, v)
        assert replay(m.record) == m.state


def test_cards_revealed_only_when_a_hand_or_game_ends():
    rules = get_rules("argentine-4p")
    rng = random.Random(7)
    for _ in range(40):
        m = Match(rules)
        while not is_over(m.state):
            if needs_deal(m.state):
                cards = list(rules.deck_cards)
                rng.shuffle(cards)
                m.deal(cards)
                continue
            seat = to_act(m.state)[0]
            events = m.act(seat, rng.choice(legal_actions(m.state, seat)))
            kinds = [e.kind for e in events]
            if EventKind.CARDS_REVEALED in kinds:
                assert EventKind.HAND_ENDED in kinds or EventKind.GAME_ENDED in kinds


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"envido_with_flor": True, "flor": False}, "envido_with_flor"),
        ({"envido_with_flor": "yes"}, "envido_with_flor"),
        ({"fold_concedes_envido": True, "fold": False}, "fold_concedes_envido"),
        ({"pica_pica": True}, "pica_pica"),
        ({"ranking": "muestra", "deck": "french40"}, "deck"),
        ({"ranking": "valencian"}, "deck"),
        ({"deck": "spanish22"}, "ranking"),
        ({"ranking": "uruguayo"}, "ranking"),
        ({"envido_declined_plus_one": True, "envido": False, "flor": False}, "envido_declined_plus_one"),
        ({"falta_envido_adds_chain": True, "envido": False, "flor": False}, "falta_envido_adds_chain"),
        ({"falta_after_envido_envido": False, "envido": False, "flor": False}, "falta_after_envido_envido"),
        ({"falta_envido_by_winner": True}, "falta_envido_by_winner"),
        (
            {"falta_envido_by_winner": True, "falta_envido": "half", "envido": False, "flor": False},
            "falta_envido_by_winner",
        ),
        ({"fold_concedes_envido_after_truco": True}, "fold_concedes_envido_after_truco"),
        ({"fold_alone": True}, "fold_alone"),
        ({"fold_alone": True, "players": 4, "fold": False}, "fold_alone"),
        ({"fold_alone": True, "players": 3}, "fold_alone"),
        ({"truco_capped_at_game": "yes"}, "truco_capped_at_game"),
    ],
)
def test_invalid_options_name_the_field_and_allowed_values(overrides, field):
    with pytest.raises(InvalidRulesError) as info:
        get_rules("argentine", **overrides)
    assert info.value.field == field
    assert "allowed" in str(info.value) or "expected" in str(info.value)


def test_preset_defaults():
    a = get_rules("argentine")
    assert (a.players, a.target_points, a.flor, a.flor_mandatory, a.envido_with_flor) == (
        2,
        15,
        True,
        True,
        False,
    )
    assert not a.fold_concedes_envido and a.falta_envido == "game"
    assert (a.envido_declined_plus_one, a.falta_envido_adds_chain, a.falta_envido_by_winner) == (False,) * 3
    assert a.falta_after_envido_envido and not a.fold_concedes_envido_after_truco
    assert not a.truco_capped_at_game and not a.fold_alone
    assert get_rules("argentine-30").target_points == 30
    assert get_rules("pica-pica").pica_pica and get_rules("pica-pica").players == 6
    assert get_rules("carancho").play_mode == "carancho"
    v = get_rules("valencian")
    assert (v.deck, v.ranking, v.flor) == ("spanish22", "valencian", False)
    u = get_rules("uruguayan")
    assert (u.ranking, u.falta_envido) == ("muestra", "half")


def test_house_rules_name_the_fields_set_apart_from_the_preset():
    """What a match's rules summary names (``RulesSummary.house_rules``): the player count,
    target and games are shown beside it, so what follows from them is no house rule."""
    assert house_rules(get_rules("argentine-3p")) == ()
    assert house_rules(get_rules("paulista", target_points=24, games_to_win=2)) == ()
    rules = get_rules("uruguayan", falta_envido_by_winner=True, falta_after_envido_envido=False, flor=False)
    assert house_rules(rules) == ("falta_after_envido_envido", "falta_envido_by_winner", "flor")

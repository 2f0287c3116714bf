"""Rule knobs and phases are StrEnums: the engine's own uses are checked by mypy, and every
stored rule set, state and record keeps (and still loads) the same JSON strings."""

from __future__ import annotations

import json

import pytest

from truco_engine import InvalidRulesError, MatchState, RuleSet, get_rules, new_match, observe, preset_names
from truco_engine.enums import RULE_ENUMS, Deck, Phase, PlayMode, Ranking


@pytest.mark.parametrize("name", preset_names())
def test_rule_sets_serialize_names_as_plain_strings_and_load_them_back(name):
    rules = get_rules(name)
    d = rules.to_dict()
    for field in RULE_ENUMS:
        assert type(d[field]) is str
        assert isinstance(getattr(rules, field), RULE_ENUMS[field])
    text = json.dumps(d, sort_keys=True)
    back = RuleSet.from_dict(json.loads(text))
    assert back == rules and json.dumps(back.to_dict(), sort_keys=True) == text


def test_members_equal_the_old_strings():
    r = get_rules("argentine-3p")
    assert r.ranking == "argentine" and r.deck == "spanish40" and r.play_mode == "individual"
    assert (Ranking.VIRA, Deck.FRENCH40, PlayMode.CARANCHO) == ("vira", "french40", "carancho")


def test_strings_given_to_a_rule_set_become_members():
    r = RuleSet(ranking="fixed_mineiro")  # type: ignore[arg-type]
    assert r.ranking is Ranking.FIXED_MINEIRO
    assert get_rules("paulista", all_tricks_tied="mano").all_tricks_tied == "mano"
    with pytest.raises(InvalidRulesError) as err:
        get_rules("paulista", play_mode="solo")
    assert err.value.field == "play_mode" and "teams, individual, carancho" in str(err.value)


def test_phase_is_a_strenum_in_states_and_observations():
    s = new_match(get_rules("paulista-2p"))
    assert s.phase is Phase.DEAL and s.phase == "deal"
    assert observe(s, 0).phase == "deal"
    d = s.to_dict()
    assert type(d["phase"]) is str and d["phase"] == "deal"
    assert MatchState.from_dict(d).phase is Phase.DEAL


def test_a_rule_set_built_again_from_the_same_plain_form_is_the_one_built_before():
    """The plain forms are remembered both ways (a server builds the same few rule sets for
    every match it creates or loads): the same input gives the same, immutable object, and a
    new dict each time the other way, which a caller may change."""
    rules = get_rules("mineiro")
    plain = rules.to_dict()
    first = RuleSet.from_dict(plain)
    assert RuleSet.from_dict(dict(plain)) is first and first == rules
    again = rules.to_dict()
    assert again == plain and again is not plain
    again["truco_ladder"].append(99)
    again["name"] = "changed"
    assert rules.to_dict() == plain  # what was remembered is not the caller's copy


@pytest.mark.parametrize(
    ("field", "value"),
    [("fold", 1), ("fold", 0), ("truco_call_names", ["truco", 6, "nine", "twelve"])],
)
def test_an_input_refused_stays_refused_after_its_look_alike_was_built(field, value):
    """``1`` equals ``True`` and hashes like it: a remembered build of ``{"fold": true}`` must
    not answer for ``{"fold": 1}``, which is refused."""
    plain = get_rules("paulista").to_dict()
    good = dict(plain)
    good[field] = bool(value) if isinstance(value, int) else ["truco", "6", "nine", "twelve"]
    RuleSet.from_dict(good)
    bad = dict(plain)
    bad[field] = value
    with pytest.raises(InvalidRulesError) as err:
        RuleSet.from_dict(bad)
    assert err.value.field == field


def test_a_preset_with_the_same_house_rules_is_built_once():
    """``get_rules`` remembers what it built for a preset and its overrides (every match
    created asks again); an override that is refused stays refused."""
    first = get_rules("paulista-2p", target_points=24)
    assert get_rules("paulista", players=2, target_points=24) is first
    assert first.hand_of_eleven_at == 23 and first.players == 2
    assert get_rules("paulista-2p", target_points=24, fold=True) is not first
    for _ in range(2):
        with pytest.raises(InvalidRulesError):
            get_rules("paulista-2p", fold=1)

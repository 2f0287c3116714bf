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

"""The house rules other engines play (docs/rules/house-rules.md), all switched on at once, for
the property and random-play tests."""

from __future__ import annotations

from typing import Any, Final

from truco_engine import InvalidRulesError, RuleSet

HOUSE_RULES: Final[dict[str, Any]] = {
    "envido_declined_plus_one": True,
    "falta_envido_adds_chain": True,
    "falta_envido_by_winner": True,
    "falta_after_envido_envido": False,
    "fold_concedes_envido_after_truco": True,
    "truco_capped_at_game": True,
    "fold_alone": True,
}
"""Every house-rule field, set away from its default."""

NEEDS: Final[dict[str, dict[str, Any]]] = {
    "falta_envido_by_winner": {"falta_envido": "half"},
    "fold_concedes_envido_after_truco": {"fold_concedes_envido": True},
    "fold_alone": {"fold": True},
}
"""What a house rule needs switched on with it (the option it changes)."""


def with_house_rules(rules: RuleSet) -> RuleSet:
    """``rules`` with every house rule it can take switched on (with what each needs); a rule
    these rules cannot take (envido options without envido, folding alone at two players) is
    left off."""
    for name, value in HOUSE_RULES.items():
        try:
            rules = rules.replace(**NEEDS.get(name, {}), **{name: value})
        except InvalidRulesError:
            continue
    return rules


def house_fields(rules: RuleSet) -> set[str]:
    """The house rules switched on in ``rules``."""
    return {name for name, value in HOUSE_RULES.items() if getattr(rules, name) == value}

"""Built-in bots: ``random``, ``rules`` and ``mcts`` (each reads only its observation).

from truco_bots import get_bot, BOTS
bot_class = get_bot("rules")
"""

from __future__ import annotations

from truco_bots.random_bot import RandomBot
from truco_bots.rules_bot import RulesBot
from truco_client.bot import Bot

BOTS: dict[str, type[Bot]] = {"random": RandomBot, "rules": RulesBot}


def get_bot(name: str) -> type[Bot]:
    """A built-in bot class by name (``random``, ``rules``, ``mcts``)."""
    if name == "mcts" and "mcts" not in BOTS:
        from truco_bots.mcts_bot import MctsBot

        BOTS["mcts"] = MctsBot
    try:
        return BOTS[name]
    except KeyError:
        raise ValueError(f"unknown bot {name!r}; built-in bots: random, rules, mcts") from None


__all__ = ["BOTS", "RandomBot", "RulesBot", "get_bot"]

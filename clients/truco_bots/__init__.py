"""Built-in bots: ``random``, ``rules`` and ``mcts`` (each reads only its observation).

from truco_bots import get_bot, load_bot, BOTS
bot_class = get_bot("rules")
mine = load_bot("mybot:MyBot")     # or any built-in name: load_bot("mcts")
"""

from __future__ import annotations

import importlib
import os
import sys

from truco_bots.random_bot import RandomBot
from truco_bots.rules_bot import RulesBot
from truco_kit.bot import Bot

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


def load_bot(spec: str) -> type[Bot]:
    """A bot class from a built-in name (``random``, ``rules``, ``mcts``) or ``MODULE:Class``
    (a :class:`truco_kit.Bot` subclass (``truco_client.Bot``); the current directory is searched first, so
    ``mybot:MyBot`` finds ``./mybot.py``). Every failure is a :class:`ValueError` whose message
    is one line."""
    if ":" not in spec:
        return get_bot(spec)
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"bot {spec!r}: expected MODULE:Class or one of random, rules, mcts")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ValueError(f"bot {spec!r}: no module named {exc.name!r}") from None
    except Exception as exc:  # the user's module failed while importing
        raise ValueError(
            f"bot {spec!r}: importing {module_name} failed: {type(exc).__name__}: {exc}"
        ) from None
    cls = getattr(module, attr, None)
    if cls is None:
        raise ValueError(f"bot {spec!r}: module {module_name} has no {attr!r}")
    if not (isinstance(cls, type) and issubclass(cls, Bot)):
        raise ValueError(f"bot {spec!r}: {attr} is not a subclass of truco_client.Bot")
    return cls


def split_pair(pair: str) -> tuple[str, str]:
    """``A:B`` of two bot specs, each a built-in name or ``MODULE:Class``:
    ``rules:random``, ``mybot:MyBot:rules``, ``rules:mybot:MyBot``, ``a:A:b:B``."""
    parts = pair.split(":")
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(parts) == 3:
        if parts[0] in _BUILT_IN:
            return parts[0], ":".join(parts[1:])
        return ":".join(parts[:2]), parts[2]
    if len(parts) == 4:
        return ":".join(parts[:2]), ":".join(parts[2:])
    raise ValueError(f"pair {pair!r}: expected A:B (each a built-in bot name or MODULE:Class)")


_BUILT_IN = ("random", "rules", "mcts")

__all__ = ["BOTS", "RandomBot", "RulesBot", "get_bot", "load_bot", "split_pair"]

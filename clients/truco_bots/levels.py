"""The ladder of built-in bots: levels 1 (a beginner) to 6 (the strongest within the budget).

Every level plays every rule set (Brazilian, River Plate and Uruguayan presets alike) from its
observation only:

* levels 1 to 3 play the ``rules`` heuristics with the mistakes of a person learning the game:
  at each decision with a choice, with a probability that falls with the level, a card played
  without thinking, a call answered on a whim, a bet made or missed at random (any legal
  action but folding);
* level 4 plays the ``rules`` heuristics without mistakes;
* levels 5 and 6 search (information-set Monte Carlo over determinized deals, ``mcts``): level
  5 with a small budget, level 6 with the largest the CPU budget allows.

:func:`level_bot` makes the bot of a level; :func:`decide` is one decision of it, what the
server runs for a seat it plays (in a process of its pool): it receives the seat's
observation and nothing else, so it cannot depend on a card the seat does not see.
"""

from __future__ import annotations

import time

from truco_bots.mcts_bot import MctsBot
from truco_bots.rules_bot import RulesBot
from truco_kit.actions import Action
from truco_kit.bot import Bot
from truco_kit.observation import Observation

LEVELS = range(1, 7)
"""The levels of the ladder (the same as :data:`truco_match.create.BOT_LEVELS`)."""

SLIPS = {1: 0.45, 2: 0.25, 3: 0.1}
"""Per beginner level: the probability of a mistake at a decision with a choice."""

SEARCH = {5: 80, 6: 400}
"""Per searching level: the rollouts of one decision (also bounded by the CPU budget)."""

DEFAULT_CPU_MS = 250
"""The CPU budget of one decision when none is given (ms)."""


class Beginner(RulesBot):
    """The ``rules`` heuristics with a person's mistakes (``slip``: their probability at a
    decision with a choice)."""

    def __init__(self, seed: int | None = None, slip: float = 0.25) -> None:
        super().__init__(seed)
        self.slip = float(slip)

    def choose(self, observation: Observation) -> Action:
        legal = observation.legal_actions
        if len(legal) > 1 and self.rng.random() < self.slip:
            whims = [a for a in legal if a.kind != "fold"] or list(legal)
            return self.rng.choice(whims)
        return super().choose(observation)


class LevelBot(Bot):
    """The bot of one level of the ladder (:func:`level_bot` makes it)."""

    def __init__(self, seed: int | None = None, level: int = 4, cpu_ms: int = DEFAULT_CPU_MS) -> None:
        super().__init__(seed)
        if level not in LEVELS:
            raise ValueError(f"level must be 1 to 6, got {level}")
        self.level = level
        self.name = f"level{level}"
        self.inner: Bot
        if level in SLIPS:
            self.inner = Beginner(seed, SLIPS[level])
        elif level in SEARCH:
            self.inner = MctsBot(seed, iterations=SEARCH[level], time_limit=cpu_ms / 1000)
        else:
            self.inner = RulesBot(seed)

    def choose(self, observation: Observation) -> Action:
        return self.inner.choose(observation)

    def __repr__(self) -> str:
        return f"LevelBot(level={self.level})"


def level_bot(level: int, seed: int | None = None, cpu_ms: int = DEFAULT_CPU_MS) -> LevelBot:
    """The bot of ``level`` (1 to 6); ``cpu_ms``: the CPU budget of one decision."""
    return LevelBot(seed, level, cpu_ms)


def decide(
    level: int, observation: Observation, seed: int, cpu_ms: int = DEFAULT_CPU_MS
) -> tuple[Action, float]:
    """One decision of the bot of ``level`` for the seat whose ``observation`` this is (the
    game awaits it): the action, and the CPU seconds it took. The same observation and seed
    give the same action (up to the CPU budget cutting a search short)."""
    started = time.process_time()
    action = level_bot(level, seed, cpu_ms).choose(observation)
    if action not in observation.legal_actions:  # a bug of a bot: never let it stall a match
        action = observation.legal_actions[0]
    return action, time.process_time() - started

"""The ladder of built-in bots: levels 1 (a beginner) to 6 (the strongest within the budget).

Every level plays every rule set (Brazilian, River Plate and Uruguayan presets alike) from its
observation only:

* levels 1 to 3 play the ``rules`` heuristics with the mistakes of a person learning the game,
  at each decision with a choice with a probability that falls with the level
  (:data:`MISTAKES`): every call answered "quiero" whatever the hand (a truco, an envido, a
  falta envido, a hand of eleven), no envido called, no truco called short of a very strong
  hand (never a bluff), the best card led in the first trick and spent to beat any card;
* level 4 plays the ``rules`` heuristics without mistakes;
* level 6 searches (information-set Monte Carlo over determinized deals, ``mcts``) at every
  decision with a choice; level 5 makes the same search at half of them and plays the ``rules``
  heuristics at the others (:attr:`Search.share`).

:func:`level_bot` makes the bot of a level; :func:`decide` is one decision of it, what the
server runs for a seat it plays (in a process of its pool): it receives the seat's
observation and nothing else, so it cannot depend on a card the seat does not see.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from truco_bots.heuristics import percentiles
from truco_bots.mcts_bot import MctsBot
from truco_bots.rules_bot import RulesBot
from truco_kit import actions as A
from truco_kit.actions import Action
from truco_kit.bot import Bot
from truco_kit.observation import Observation

LEVELS = range(1, 7)
"""The levels of the ladder (the same as :data:`truco_match.create.BOT_LEVELS`)."""

MISTAKES = {1: 0.7, 2: 0.4, 3: 0.2}
"""Per beginner level: the probability of playing a decision with a choice as a beginner does."""


@dataclass(frozen=True)
class Search:
    """The search of a level: :class:`~truco_bots.mcts_bot.MctsBot`'s parameters."""

    iterations: int
    rollout_policy: str = "rules"
    weigh: bool = False
    share: float = 1.0
    """The probability of searching at a decision with a choice; ``rules`` decides the others."""


_STRONGEST = Search(600, "model", weigh=True)
SEARCH = {5: replace(_STRONGEST, share=0.5), 6: _STRONGEST}
"""Per searching level: the :class:`~truco_bots.mcts_bot.MctsBot` of one decision (its rollouts,
also bounded by the CPU budget), played with the model of ``rules`` read from the engine state
(several times cheaper than building observations), each world weighed by how likely the other
seats' actions are in it. Level 5 is level 6 at half of its decisions: a search at every
decision, however small, plays level 6 about even (docs/bots.md, "The ladder"), so the step
between the two is how often the search decides, as between levels 1 to 4 it is how often a
mistake is made."""

DEFAULT_CPU_MS = 250
"""The CPU budget of one decision when none is given (ms)."""

SURE_TRUCO = 0.9
"""The hand power (:func:`truco_bots.heuristics.hand_power`) below which a beginner never calls
truco (``rules`` calls from 0.8, and bluffs)."""


class Beginner(RulesBot):
    """The ``rules`` heuristics with a person's mistakes (``mistakes``: their probability at a
    decision with a choice). Each is a mistake that costs points in every family: answering
    every call "quiero" loses the doubled stake with a weak hand, a truco never bluffed and
    called late leaves points on the table, an envido never called gives its points away, the
    best card spent early loses the later tricks."""

    def __init__(self, seed: int | None = None, mistakes: float = 0.4) -> None:
        super().__init__(seed)
        self.mistakes = float(mistakes)

    def choose(self, observation: Observation) -> Action:
        o = observation
        choice = len(o.legal_actions) > 1 and o.rules is not None and not o.hidden_count
        if choice and self.rng.random() < self.mistakes:
            naive = self.naive(o)
            if naive is not None and naive in o.legal_actions:
                return naive
        return super().choose(o)

    def naive(self, o: Observation) -> Action | None:
        """The beginner's decision, or ``None`` where it decides as ``rules`` does."""
        assert o.rules is not None
        kinds = o.legal_kinds
        if "flor" in kinds:
            return A.flor()
        if o.pending is not None:
            return A.accept() if "accept" in kinds else None
        pct = percentiles(o.rules, o.turn_up)
        if "truco" in kinds and self._power(o, [pct[c] for c in o.my_cards]) >= SURE_TRUCO:
            return A.truco()
        plays = sorted(
            (a for a in o.legal("play") if not a.face_down and a.card), key=lambda a: pct[a.card or ""]
        )
        if not plays:
            return None
        trick = o.current_trick
        table = [pct[p.card] for p in trick.plays if p.card] if trick is not None else []
        if not table or pct[plays[-1].card or ""] > max(table):
            return plays[-1]  # leads its best card; beats the table with its best card
        return plays[0]


class Sometimes(Bot):
    """``searcher`` at a decision with a choice with probability ``share``, ``rules`` at the
    others (and where there is no choice)."""

    def __init__(self, seed: int | None, searcher: Bot, share: float) -> None:
        super().__init__(seed)
        self.searcher = searcher
        self.share = float(share)
        self.rules = RulesBot(None if seed is None else seed + 2)  # not the draws of ``self.rng``

    def choose(self, observation: Observation) -> Action:
        if len(observation.legal_actions) > 1 and self.rng.random() < self.share:
            return self.searcher.choose(observation)
        return self.rules.choose(observation)


class LevelBot(Bot):
    """The bot of one level of the ladder (:func:`level_bot` makes it)."""

    def __init__(self, seed: int | None = None, level: int = 4, cpu_ms: int = DEFAULT_CPU_MS) -> None:
        super().__init__(seed)
        if level not in LEVELS:
            raise ValueError(f"level must be 1 to 6, got {level}")
        self.level = level
        self.name = f"level{level}"
        self.inner: Bot
        if level in MISTAKES:
            self.inner = Beginner(seed, MISTAKES[level])
        elif level in SEARCH:
            search = SEARCH[level]
            searcher = MctsBot(
                seed,
                iterations=search.iterations,
                time_limit=cpu_ms / 1000,
                rollout_policy=search.rollout_policy,
                weigh=search.weigh,
            )
            self.inner = searcher if search.share >= 1 else Sometimes(seed, searcher, search.share)
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

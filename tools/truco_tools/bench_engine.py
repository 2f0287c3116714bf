"""Random-play benchmark of the engine: ``truco bench engine``.

Each step computes the acting seat's legal actions and observation (what a bot or the
server needs), then applies a random legal action. Randomness lives here, in the driver,
never in the engine. Figures are printed one line per preset and player count.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable
from dataclasses import dataclass

from truco_engine.engine import apply, deal, is_over, legal_actions, needs_deal, new_match, to_act
from truco_engine.observe import observe
from truco_engine.rules import RuleSet, get_rules


def default_cases() -> list[str]:
    """Every registered preset at every player count it allows (``NAME-Np``)."""
    from truco_engine.errors import InvalidRulesError
    from truco_engine.rules import preset_names

    cases = []
    for name in preset_names():
        for players in range(2, 13):
            try:
                get_rules(f"{name}-{players}p")
            except InvalidRulesError:
                continue
            cases.append(f"{name}-{players}p")
    return cases


@dataclass(frozen=True)
class BenchResult:
    case: str
    hands: int
    actions: int
    seconds: float

    @property
    def hands_per_s(self) -> float:
        return self.hands / self.seconds

    @property
    def actions_per_s(self) -> float:
        return self.actions / self.seconds

    def line(self) -> str:
        return f"{self.case}: {self.hands_per_s:,.0f} hands/s {self.actions_per_s:,.0f} actions/s"


def run_random(rules: RuleSet, *, seconds: float = 1.0, seed: int = 0, case: str = "") -> BenchResult:
    """Play random matches for about ``seconds``; count complete hands and actions."""
    rng = random.Random(seed)
    deck = list(rules.deck_cards)
    hands = acts = 0
    state = new_match(rules)
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        if is_over(state):
            if time.perf_counter() >= deadline:
                break
            state = new_match(rules)
        if needs_deal(state):
            if hands % 16 == 0 and time.perf_counter() >= deadline:
                break
            rng.shuffle(deck)
            state, _ = deal(state, deck)
            hands += 1
            continue
        seat = to_act(state)[0]
        legal = legal_actions(state, seat)
        observe(state, seat)
        state, _ = apply(state, seat, legal[rng.randrange(len(legal))])
        acts += 1
    elapsed = time.perf_counter() - start
    return BenchResult(case or rules.name, hands, acts, elapsed)


def run_cases(cases: Iterable[str], seconds: float, seed: int = 0) -> list[BenchResult]:
    out = []
    for case in cases:
        rules = get_rules(case)
        label = f"{rules.name} {rules.players}p"
        out.append(run_random(rules, seconds=seconds, seed=seed, case=label))
    return out

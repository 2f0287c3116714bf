"""``random``: a uniformly random legal action (a baseline)."""

from __future__ import annotations

from truco_kit.actions import Action
from truco_kit.bot import Bot
from truco_kit.observation import Observation


class RandomBot(Bot):
    """Picks uniformly among the legal actions."""

    name = "random"

    def choose(self, observation: Observation) -> Action:
        return self.rng.choice(observation.legal_actions)

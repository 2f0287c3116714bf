"""The bot kit's base class.

Subclass :class:`Bot` and implement :meth:`Bot.choose`; it gets an
:class:`~truco_client.observation.Observation` in which ``is_my_turn`` is true and must return
one of ``observation.legal_actions``. The same class plays over the network
(``truco bot MODULE:Class ...`` or :func:`truco_client.runner.run_bot`) and in-process
(:func:`truco_client.local.run_local`).
"""

from __future__ import annotations

import random

from truco_client.actions import Action
from truco_client.observation import Observation


class Bot:
    """Base class of every bot. One instance plays one seat (it may play many matches)."""

    name: str = "bot"
    """Short name used in reports."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def choose(self, observation: Observation) -> Action:
        """Return one of ``observation.legal_actions``."""
        raise NotImplementedError

    def on_observation(self, observation: Observation) -> None:
        """Called with every observation the bot receives (also when it does not act)."""

    def on_match_start(self, seat: int) -> None:
        """Called before a match starts, with the seat the bot plays."""

    def on_match_end(self, observation: Observation) -> None:
        """Called once the match is over."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

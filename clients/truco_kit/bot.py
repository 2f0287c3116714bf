"""The bot kit's base class.

Subclass :class:`Bot` and implement :meth:`Bot.choose`; it gets an
:class:`~truco_kit.observation.Observation` in which the game awaits this seat's decision
(``is_my_turn``) and must return one of ``observation.legal_actions``. Some rule sets let a
seat act out of turn (a truco called while the opponent is to play, in the Brazilian presets):
:meth:`Bot.out_of_turn` is asked then, and declines unless a bot overrides it. The same class
plays over the network (``truco bot MODULE:Class ...`` or :func:`truco_client.runner.run_bot`),
in-process (:func:`truco_kit.local.run_local`) and on a seat the server plays.
"""

from __future__ import annotations

import random

from truco_kit.actions import Action
from truco_kit.observation import Observation


class Bot:
    """Base class of every bot. One instance plays one seat (it may play many matches)."""

    name: str = "bot"
    """Short name used in reports."""

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)

    def choose(self, observation: Observation) -> Action:
        """Return one of ``observation.legal_actions`` (called when the game awaits this seat)."""
        raise NotImplementedError

    def out_of_turn(self, observation: Observation) -> Action | None:
        """An action to take while the game awaits another seat (one of
        ``observation.legal_actions``), or ``None`` to let the turn go on. The default
        declines: a bot that does not override this acts only on its own turn, the same over
        the network as in :func:`~truco_kit.local.run_local`."""
        return None

    def on_observation(self, observation: Observation) -> None:
        """Called with every observation the bot receives (also when it does not act)."""

    def on_match_start(self, seat: int) -> None:
        """Called before a match starts, with the seat the bot plays."""

    def on_match_end(self, observation: Observation) -> None:
        """Called once the match is over."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

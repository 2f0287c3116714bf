"""The bot kit's core, without the network: what a seat sees (:class:`Observation`), the
:class:`Bot` base class, the action builders and the local runner (:mod:`truco_kit.local`).

The SDK (``truco_client``) re-exports all of it, and so do its documented modules
(``truco_client.actions``, ``truco_client.bot``, ``truco_client.observation``,
``truco_client.local``); the built-in bots and the server's bot seats build on this package
alone, so the server never imports the SDK's clients.
"""

from truco_kit import actions
from truco_kit.actions import Action
from truco_kit.bot import Bot
from truco_kit.observation import Event, HandTracker, Observation, Pending, Play, Trick

__all__ = ["Action", "Bot", "Event", "HandTracker", "Observation", "Pending", "Play", "Trick", "actions"]

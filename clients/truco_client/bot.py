"""The bot kit's base class, :class:`Bot` (defined in :mod:`truco_kit.bot`)."""

from truco_kit.bot import Bot

__all__ = ["Bot"]

"""The observation type bots and apps read (defined in :mod:`truco_kit.observation`)."""

from truco_kit.observation import Event, HandTracker, Observation, Pending, Play, Trick

__all__ = ["Event", "HandTracker", "Observation", "Pending", "Play", "Trick"]

"""Bots whose moves a test can foresee, for the terminal tests (``truco play --bot
tests.clients.scripted_bots:TrucoAtOnce`` from the repository's root)."""

from __future__ import annotations

from truco_client import Bot, Observation
from truco_client import actions as A
from truco_client.actions import Action


class TrucoAtOnce(Bot):
    """Calls truco at its first chance in every hand, in its turn or out of it (paulista allows
    both), accepts every call and plays its first legal card. Once the other side accepted its
    truco it cannot raise, so from then until the hand ends it acts only in its turn: a prompt
    of the other seat in its own turn is then one no move of this bot can make stale."""

    name = "truco-at-once"

    def choose(self, obs: Observation) -> Action:
        if obs.pending is not None and obs.can("accept"):
            return A.accept()
        if obs.can("truco"):
            return A.truco()
        plays = obs.legal("play")
        return plays[0] if plays else obs.legal_actions[0]

    def out_of_turn(self, obs: Observation) -> Action | None:
        return A.truco() if obs.can("truco") else None

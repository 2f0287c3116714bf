"""An example bot: wins tricks cheaply, calls truco with two strong cards, takes envido
with 27 or more.

    truco bot truco_client.examples.high_card:HighCardBot --server HOST:PORT --match ID --token T
"""

from __future__ import annotations

from truco_client import Bot, Observation
from truco_client import actions as A
from truco_client.actions import Action


class HighCardBot(Bot):
    name = "high-card"

    def choose(self, obs: Observation) -> Action:
        strength = obs.strengths() if obs.rules else {}
        if obs.can("flor"):
            return A.flor()
        if obs.pending is not None and obs.can("accept"):
            if obs.pending.kind == "envido":
                ok = obs.envido_points() >= 27
            else:
                ok = sum(1 for c in obs.my_cards if strength.get(c, 0) >= 100) >= 1
            return A.accept() if ok else A.decline()
        if obs.can("truco") and sum(1 for c in obs.my_cards if strength.get(c, 0) >= 100) >= 2:
            return A.truco()
        cards = sorted(obs.playable_cards, key=lambda c: strength.get(c, 0))
        if cards:
            trick = obs.current_trick
            table = [strength.get(p.card, -1) for p in trick.plays if p.card] if trick else []
            beating = [c for c in cards if strength.get(c, 0) > max(table, default=-1)]
            return A.play(beating[0] if table and beating else cards[0] if table else cards[-1])
        return obs.legal_actions[0]

"""``rules``: a rule-based bot that reads only its observation.

* Card strength comes from the rule set and the hand's vira / muestra
  (:func:`truco_engine.ranking.strength_table`), as a percentile of the deck.
* Envido: calls with 28+ points (real envido with 31+), accepts with 27+ (more when the
  chain is raised), sings flor whenever it can and raises it with a high flor.
* Truco: calls when it is likely to win the hand (won a trick and holds a strong card, or
  holds two strong cards), accepts with a fair hand, raises with a very strong one, declines
  (or folds) weak ones; a small bluff rate keeps it from being fully predictable.
* Cards: follows with the cheapest card that beats the table (or throws its weakest);
  leads its middle card in the first trick and its strongest afterwards.
* Hand of eleven: plays when the side's cards (its own plus the partner's shown ones) are good.
"""

from __future__ import annotations

from truco_bots.heuristics import hand_power, percentiles
from truco_kit import actions as A
from truco_kit.actions import Action
from truco_kit.bot import Bot
from truco_kit.observation import Observation

ENVIDO_NEED = {"envido": 27, "real_envido": 29, "falta_envido": 31}


class RulesBot(Bot):
    """Heuristic player; see the module docstring."""

    name = "rules"
    bluff = 0.05

    def choose(self, observation: Observation) -> Action:
        o = observation
        legal = o.legal_actions
        if len(legal) == 1:
            return legal[0]
        if o.rules is None:  # no rule set: play the first legal card, accept calls
            return o.legal("play")[0] if o.can("play") else legal[0]
        pct = percentiles(o.rules, o.turn_up)
        kinds = o.legal_kinds
        if o.hidden_count:  # iron hand: blind play
            plays = o.legal("play")
            return self.rng.choice(plays) if plays else legal[0]
        if "discard" in kinds:
            return min(o.legal("discard"), key=lambda a: pct.get(a.card or "", 0.0))
        if "flor" in kinds:
            return A.flor()
        mine = [pct[c] for c in o.my_cards]
        power = self._power(o, mine)
        pending = o.pending
        if pending is not None and ("accept" in kinds or "decline" in kinds):
            return self._answer(o, power)
        # Envido first (only in the first trick before our card).
        if o.envido_enabled and ("envido" in kinds or "real_envido" in kinds):
            pts = o.envido_points()
            if pts >= 31 and "real_envido" in kinds:
                return A.real_envido()
            if pts >= 28 and "envido" in kinds:
                return A.envido()
        if "truco" in kinds and self._wants_truco(o, power):
            return A.truco()
        if "play" in kinds:
            return self._play(o)
        return legal[0]

    # ------------------------------------------------------------ evaluation
    def _power(self, o: Observation, mine: list[float]) -> float:
        won = sum(1 for t in o.tricks if t.complete and t.winner_team == o.team)
        lost = sum(
            1 for t in o.tricks if t.complete and t.winner_team is not None and t.winner_team != o.team
        )
        base = hand_power(mine)
        if o.partners and o.revealed:
            assert o.rules is not None
            table = percentiles(o.rules, o.turn_up)
            partner = [table[c] for s in o.partners for c in o.revealed.get(s, ())]
            base = max(base, hand_power(partner))
        # Tricks already decided weigh in.
        return max(0.0, min(1.0, base + 0.25 * won - 0.3 * lost))

    def _answer(self, o: Observation, power: float) -> Action:
        p = o.pending
        assert p is not None
        kinds = o.legal_kinds
        if p.kind == "hand_of_eleven":
            return A.accept() if power >= 0.55 else A.decline()
        if p.kind == "flor":
            if "contraflor" in kinds and o.has_flor() and o.envido_points() >= 33:
                return A.contraflor()
            return A.accept() if o.has_flor() and o.envido_points() >= 29 else A.decline()
        if p.kind == "envido":
            pts = o.envido_points() if o.envido_enabled else 0
            need = ENVIDO_NEED.get(p.name, 27)
            if pts >= 32 and "real_envido" in kinds:
                return A.real_envido()
            if pts >= need or (p.value_if_declined <= 1 and pts >= need - 2):
                return A.accept()
            return A.decline()
        # truco ladder
        if o.envido_enabled and ("envido" in kinds) and o.envido_points() >= 28:
            return A.envido()  # "el envido está primero"
        if power >= 0.88 and "truco" in kinds:
            return A.truco()
        if power >= 0.62 or self.rng.random() < self.bluff:
            return A.accept()
        return A.decline()

    def _wants_truco(self, o: Observation, power: float) -> bool:
        if o.pending is not None:
            return False
        # Close to the target the points of a plain hand are enough.
        if power >= 0.8:
            return True
        trick = o.current_trick
        if trick is not None and trick.plays and o.my_cards and o.rules is not None:
            # Following: a sure win of this trick with a strong hand.
            pct = percentiles(o.rules, o.turn_up)
            best_table = max(
                (pct[p.card] for p in trick.plays if p.card and o.seat_teams[p.seat] != o.team), default=0
            )
            if max(pct[c] for c in o.my_cards) > best_table and power >= 0.65:
                return True
        return self.rng.random() < self.bluff * 0.5

    # ----------------------------------------------------------------- cards
    def _play(self, o: Observation) -> Action:
        assert o.rules is not None
        pct = percentiles(o.rules, o.turn_up)
        plays = [a for a in o.legal("play") if not a.face_down and a.card]
        if not plays:
            return o.legal("play")[0]
        by_strength = sorted(plays, key=lambda a: pct[a.card or ""])
        trick = o.current_trick
        table = [p for p in trick.plays if p.card] if trick is not None else []
        if not table:
            if o.trick_index == 0 and len(by_strength) == 3:
                return by_strength[1]
            return by_strength[-1]
        best = max(table, key=lambda p: pct[p.card or ""])
        best_pct = pct[best.card or ""]
        if o.seat_teams[best.seat] == o.team:  # partner is winning: save the cards
            return by_strength[0]
        beating = [a for a in by_strength if pct[a.card or ""] > best_pct]
        if beating:
            return beating[0]
        return by_strength[0]

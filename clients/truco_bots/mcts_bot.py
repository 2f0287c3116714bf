"""``mcts``: information-set Monte Carlo search over determinized deals.

Per decision the bot samples *worlds*: complete deals consistent with its observation (its
own cards, the vira, every card seen on the table or shown, opponents' declared envido points
and sung flors), with the cards it has not seen dealt at random to the other seats. It
rebuilds each world with the local engine by dealing that deck and replaying the hand's
public actions (taken from the observation's ``hand_events``), checks the world matches what
it sees (same seat to act, same legal actions), then tries every legal action in it and plays
the rest of the hand out with the ``rules`` bot (or a faster built-in heuristic) deciding
for every seat from that seat's own view of the world. The action with the best
average point difference (game wins weighted heavily) over all worlds is played; all actions
share the same worlds and rollout seeds, so they are compared on equal terms.

The budget per decision is ``iterations`` rollouts or ``time_limit`` seconds of CPU time,
whichever comes first. When the history of the hand is unknown (resumed from a snapshot), in
the iron hand, or in variants where the replay does not apply (carancho, pica-pica), it falls
back to the ``rules`` bot. It never looks at hidden state: only ``Observation`` fields are read.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

import truco_engine as te
from truco_bots import model
from truco_bots.heuristics import hand_power, percentiles
from truco_bots.rules_bot import RulesBot
from truco_engine.ranking import envido_points_for, has_flor_for
from truco_kit.actions import Action
from truco_kit.bot import Bot
from truco_kit.observation import Event, Observation

_ENGINE_KINDS = frozenset(k.value for k in te.EventKind)
_ACCEPT = Action("accept")
_DECLINE = Action("decline")
_TRUCO = Action("truco")
_FLOR = Action("flor")


class MctsBot(Bot):
    """Determinized Monte Carlo search; see the module docstring."""

    name = "mcts"

    def __init__(
        self,
        seed: int | None = None,
        iterations: int = 300,
        time_limit: float = 1.0,
        max_sample_tries: int = 30,
        rollout_policy: str = "rules",
        belief: int = 0,
        weigh: bool = False,
    ) -> None:
        super().__init__(seed)
        self.iterations = int(iterations)
        self.time_limit = float(time_limit)
        self.max_sample_tries = max_sample_tries
        self.fallback = RulesBot(seed)
        if rollout_policy not in ("rules", "fast", "model"):
            raise ValueError("rollout_policy is 'rules', 'fast' or 'model'")
        self.rollout_policy = rollout_policy
        self.belief = int(belief)
        """Worlds drawn per world searched, one kept with a probability proportional to how
        likely the other seats' actions of the hand are in it under the model
        (:func:`truco_bots.model.likelihood`); 0 or 1: every world alike."""
        self.weigh = bool(weigh)
        """Each world's results count in proportion to how likely the other seats' actions of
        the hand are in it under the model (importance weights: every world sampled is used,
        a world where a seat called truco with weak cards counts little)."""
        self._model = RulesBot(None if seed is None else seed + 1)
        self.searches = 0
        self.fallbacks = 0

    # ------------------------------------------------------------------ choose
    def choose(self, observation: Observation) -> Action:
        o = observation
        legal = list(o.legal_actions)
        if len(legal) == 1:
            return legal[0]
        if not _searchable(o):
            self.fallbacks += 1
            return self.fallback.choose(o)
        assert o.rules is not None and o.seat is not None
        deadline = time.process_time() + self.time_limit
        totals = [0.0] * len(legal)
        worlds = 0
        used = 0
        failures = 0
        while used + len(legal) <= max(self.iterations, len(legal)) and time.process_time() < deadline:
            found = self._world(o)
            if found is None:
                failures += 1
                if failures >= 3 and worlds == 0:
                    break
                continue
            world, weight = found
            worlds += 1
            before = _utility(world, o.team or 0)
            roll_seed = self.rng.getrandbits(32)
            for i, a in enumerate(legal):
                s, _ = te.apply(world, o.seat, a)
                if self.rollout_policy == "rules":
                    self._model.rng.seed(roll_seed)
                    s = rollout_with_bot(s, self._model)
                elif self.rollout_policy == "model":
                    s = model.rollout(s, random.Random(roll_seed))
                else:
                    s = rollout(s, random.Random(roll_seed))
                totals[i] += weight * (_utility(s, o.team or 0) - before)
                used += 1
        if worlds == 0:
            self.fallbacks += 1
            return self.fallback.choose(o)
        self.searches += 1
        best = max(range(len(legal)), key=lambda i: (totals[i], -i))
        return legal[best]

    def _world(self, o: Observation) -> tuple[te.MatchState, float] | None:
        """A world to search and the weight of its results: sampled (with :attr:`weigh`,
        weighted by its likelihood), or, with :attr:`belief`, the one of that many sampled
        worlds drawn in proportion to its likelihood."""
        if self.belief <= 1:
            if self.weigh:
                return weighted_world(o, self.rng, self.max_sample_tries)
            world = sample_world(o, self.rng, self.max_sample_tries)
            return None if world is None else (world, 1.0)
        drawn = [weighted_world(o, self.rng, self.max_sample_tries) for _ in range(self.belief)]
        found = [w for w in drawn if w is not None]
        if not found:
            return None
        total = sum(weight for _, weight in found)
        x = self.rng.random() * total
        for world, weight in found:
            x -= weight
            if x < 0:
                return world, 1.0
        return found[-1][0], 1.0


# ---------------------------------------------------------------- utilities
def _searchable(o: Observation) -> bool:
    r = o.rules
    return (
        r is not None
        and o.seat is not None
        and o.hand_events is not None
        and bool(o.hand_events)
        and r.play_mode == "teams"
        and not r.pica_pica
        and not o.hidden_count
        and o.phase in ("playing", "hand_of_eleven")
    )


def _utility(s: te.MatchState, side: int) -> float:
    """Games count as a whole target of points; then the point difference of this game."""
    weight = 2 * s.rules.target_points
    other = 1 - side
    return weight * (s.games[side] - s.games[other]) + (s.scores[side] - s.scores[other])


# ---------------------------------------------------------- determinization
def sample_world(o: Observation, rng: random.Random, tries: int = 30) -> te.MatchState | None:
    """One engine state consistent with the observation, or ``None`` if it cannot be built."""
    found = _sample(o, rng, tries, weigh=False)
    return None if found is None else found[0]


def weighted_world(o: Observation, rng: random.Random, tries: int = 30) -> tuple[te.MatchState, float] | None:
    """:func:`sample_world` and how likely the other seats' actions of the hand are in that
    world under the model (:func:`truco_bots.model.likelihood`), or ``None``."""
    return _sample(o, rng, tries, weigh=True)


def _sample(
    o: Observation, rng: random.Random, tries: int, *, weigh: bool
) -> tuple[te.MatchState, float] | None:
    r = o.rules
    events = [e for e in (o.hand_events or ()) if e.kind in _ENGINE_KINDS]
    if o.seat is None or not events or not isinstance(events[0].payload, te.HandStarted):
        return None
    n = r.players
    me = o.seat
    start = events[0].payload
    turn_up = start.turn_up
    dealt: list[list[str] | None] = [None] * n
    seen: list[list[str]] = [[] for _ in range(n)]
    hidden_plays = [0] * n
    declared: dict[int, int] = {}
    flor_singers: set[int] = set()
    for e in events:
        p = e.payload
        if isinstance(p, te.CardsDealt | te.CardsRevealed) and p.cards:
            dealt[p.seat] = list(p.cards)
        elif isinstance(p, te.CardPlayed):
            if p.card is not None:
                seen[p.seat].append(p.card)
            else:
                hidden_plays[p.seat] += 1
        elif isinstance(p, te.PointsDeclared) and p.family is te.CallFamily.ENVIDO:
            if p.points is not None:
                declared[p.seat] = p.points
        elif isinstance(p, te.CallMade) and p.family is te.CallFamily.FLOR and p.name == "flor":
            flor_singers.add(p.seat)
    if dealt[me] is None:
        return None
    known: set[str] = set()
    for x in range(n):
        known.update(dealt[x] or seen[x])
    if isinstance(turn_up, str):
        known.add(turn_up)
    pool = [c for c in r.deck_cards if c not in known]
    need = {x: 3 - len(seen[x]) for x in range(n) if dealt[x] is None}
    if sum(need.values()) > len(pool) or any(v < 0 for v in need.values()):
        return None
    hands: dict[int, list[str]] = {}
    for _ in range(max(1, tries)):
        rng.shuffle(pool)
        k = 0
        hands = {}
        for x, m in need.items():
            hands[x] = seen[x] + pool[k : k + m]
            k += m
        if _consistent(r, turn_up, hands, declared, flor_singers):
            break
    full = [dealt[x] if dealt[x] is not None else hands[x] for x in range(n)]
    used = {c for h in full for c in (h or [])}
    rest = [c for c in r.deck_cards if c not in used and c != turn_up]
    rng.shuffle(rest)
    mano = start.mano
    order = [(mano + i) % n for i in range(n)]
    deck: list[str] = []
    for k in range(3):
        for x in order:
            h = full[x]
            assert h is not None
            deck.append(h[k])
    if isinstance(turn_up, str):
        deck.append(turn_up)
    deck.extend(rest)
    # Hidden (face-down) plays of other seats: the sampled cards that were not seen.
    hidden_cards = {x: [c for c in (full[x] or []) if c not in seen[x]] for x in range(n)}
    try:
        return _replay(o, r, start, deck, events, hidden_cards, weigh)
    except (te.TrucoError, KeyError, ValueError, AssertionError, TypeError):
        return None


def _consistent(
    r: te.RuleSet, turn_up: object, hands: dict[int, list[str]], declared: dict[int, int], flor: set[int]
) -> bool:
    vira = turn_up if isinstance(turn_up, str) else None
    for x, pts in declared.items():
        if x in hands and envido_points_for(r, vira, hands[x]) != pts:
            return False
    for x in flor:
        if x in hands and not has_flor_for(r, vira, hands[x]):
            return False
    if r.flor:  # a player holding flor could not have stayed silent in most cases
        for x, h in hands.items():
            if x not in flor and len(h) == 3 and has_flor_for(r, vira, h) and r.flor_mandatory:
                return False
    return True


def _replay(
    o: Observation,
    r: te.RuleSet,
    start: te.HandStarted,
    deck: list[str],
    events: Sequence[Event],
    hidden_cards: dict[int, list[str]],
    weigh: bool,
) -> tuple[te.MatchState, float] | None:
    s = te.new_match(r)
    weight = 1.0
    scores = list(o.scores)
    for e in events:
        if isinstance(e.payload, te.BetWon):
            scores[e.payload.winner_team] -= e.payload.points
    s.scores = scores
    s.games = list(o.games_won)
    s.game = start.game_number
    s.hands = start.hand_number - 1
    s.dealer = start.dealer
    s, ev = te.deal(s, deck)
    i = len(ev)
    if [e.kind.value for e in ev] != [e.kind for e in events[:i]]:
        return None
    while i < len(events):
        e = events[i]
        action = _action_of(e, hidden_cards)
        if action is None or e.seat is None:
            return None
        if weigh and e.seat != o.seat and not action.face_down:
            weight *= model.likelihood(s, e.seat, action)
        s, ev = te.apply(s, e.seat, action)
        if [x.kind.value for x in ev] != [x.kind for x in events[i : i + len(ev)]]:
            return None
        i += len(ev)
    if te.to_act(s) != o.awaited or o.seat is None:
        return None
    if set(te.legal_actions(s, o.seat)) != set(o.legal_actions):
        return None
    return s, weight


def _action_of(e: Event, hidden_cards: dict[int, list[str]]) -> Action | None:
    p = e.payload
    if isinstance(p, te.CardPlayed):
        card = p.card
        if card is None:
            if not hidden_cards.get(p.seat):
                return None
            card = hidden_cards[p.seat].pop()
        elif card in hidden_cards.get(p.seat, []):
            hidden_cards[p.seat].remove(card)
        return Action("play", card, face_down=p.face_down)
    if isinstance(p, te.CallMade):
        if p.family is te.CallFamily.TRUCO:
            return _TRUCO
        return Action(p.name) if p.name in te.ACTION_KINDS else None
    if isinstance(p, te.CallAnswered):
        return _ACCEPT if p.accepted else _DECLINE
    if isinstance(p, te.HandOfElevenDecision):
        return _ACCEPT if p.play else _DECLINE
    if isinstance(p, te.Folded):
        return Action("fold")
    if isinstance(p, te.CardDiscarded):
        return Action("discard", p.card) if p.card is not None else None
    return None


# ------------------------------------------------------------------ rollouts
def rollout_with_bot(s: te.MatchState, bot: Bot, max_steps: int = 200) -> te.MatchState:
    """Play the rest of the hand with ``bot`` deciding for every seat from that seat's own
    observation of the world (the opponent model)."""
    steps = 0
    r = s.rules
    while s.phase == "play" and steps < max_steps:
        seat = te.to_act(s)[0]
        acts = te.legal_actions(s, seat)
        single = len(acts) == 1
        a = acts[0] if single else bot.choose(Observation.from_engine(te.observe(s, seat), r))
        s, _ = te.apply(s, seat, a)
        steps += 1
    return s


def rollout(s: te.MatchState, rng: random.Random, max_steps: int = 200) -> te.MatchState:
    """Play the rest of the hand with :func:`rollout_policy` for every seat."""
    steps = 0
    while s.phase == "play" and steps < max_steps:
        seat = te.to_act(s)[0]
        acts = te.legal_actions(s, seat)
        s, _ = te.apply(s, seat, rollout_policy(s, seat, acts, rng))
        steps += 1
    return s


def rollout_policy(s: te.MatchState, seat: int, acts: list[Action], rng: random.Random) -> Action:
    """A fast heuristic for a seat that knows its own cards (used inside a world)."""
    if len(acts) == 1:
        return acts[0]
    h = s.hand
    assert h is not None
    r = s.rules
    pct = percentiles(r, h.turn_up)
    kinds = {a.kind for a in acts}
    if "flor" in kinds:
        return _FLOR
    side = h.side_of[seat]
    cards = h.cards[seat]
    won = sum(1 for t in h.tricks if t.side == side)
    lost = sum(1 for t in h.tricks if t.side is not None and t.side != side)
    power = hand_power([pct[c] for c in cards]) + 0.25 * won - 0.3 * lost
    if h.eleven_decider is not None:
        return _ACCEPT if power >= 0.5 else _DECLINE
    call = h.bet if h.bet is not None else h.truco
    if call is not None:
        if call.family == "truco":
            return _ACCEPT if power >= 0.6 + 0.1 * rng.random() else _DECLINE
        if call.family == "envido":
            pts = envido_points_for(r, h.turn_up, h.dealt[seat])
            return _ACCEPT if pts >= 27 else _DECLINE
        return _ACCEPT
    if "truco" in kinds and power >= 0.85:
        return _TRUCO
    plays = [a for a in acts if a.kind == "play" and not a.face_down and a.card is not None]
    if not plays:
        others = [a for a in acts if a.kind != "fold"]
        return others[0] if others else acts[0]
    if rng.random() < 0.1:
        return rng.choice(plays)
    plays.sort(key=lambda a: pct[a.card or ""])
    trick = h.tricks[-1]
    table = [(x, c) for x, c, down in trick.plays if not down]
    if not table:
        return plays[len(plays) // 2] if len(h.tricks) == 1 else plays[-1]
    bx, bc = max(table, key=lambda p: pct[p[1]])
    if h.side_of[bx] == side:
        return plays[0]
    for a in plays:
        if pct[a.card or ""] > pct[bc]:
            return a
    return plays[0]

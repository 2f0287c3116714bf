"""Per-seat observations: the only thing a player (or spectator) ever sees of a match.

:func:`observe` returns what ``seat`` is entitled to: its own hand, the public table, tricks
(face-down cards only to whoever played them), scores, the hand's value, the pending call,
whose turn it is, its legal actions, and what the rules reveal (partners' cards at the hand
of eleven). ``seat=None`` is a spectator: public information only.
"""

from __future__ import annotations

from truco_engine import scoring as S
from truco_engine import variants as V
from truco_engine._fast import positional_new
from truco_engine.engine import seat_teams, to_act
from truco_engine.enums import Phase
from truco_engine.events import CallFamily, Special
from truco_engine.moves import legal_tuple
from truco_engine.state import MatchState, Trick
from truco_engine.views import Observation, PendingCall, PlayView, TrickView

__all__ = ["Observation", "PendingCall", "PlayView", "TrickView", "observe"]


def observe(state: MatchState, seat: int | None) -> Observation:
    """The observation of ``seat`` (``None``: a spectator)."""
    r = state.rules
    h = state.hand
    teams = seat_teams(state)
    if seat is not None and not 0 <= seat < r.players:
        raise ValueError(f"seat {seat} does not exist; seats are 0..{r.players - 1}")
    team = None if seat is None else teams[seat]
    if h is None:
        return Observation(
            seat=seat,
            team=team,
            preset=r.name,
            players=r.players,
            phase=state.phase,
            game_number=state.game,
            hand_number=0,
            dealer=state.dealer,
            mano=None,
            turn_up=None,
            special=None,
            hand=(),
            hidden_hand=0,
            hand_sizes=(0,) * r.players,
            revealed={},
            tricks=(),
            seat_teams=teams,
            scores=tuple(state.scores),
            games_won=tuple(state.games),
            hand_value=r.base_value,
            pending=None,
            awaited=(),
            legal_actions=(),
            decision=state.actions,
            winner_team=state.winner,
        )
    own: tuple[str, ...] = ()
    hidden = 0
    cards = h.cards
    if seat is not None:
        if h.blind:
            hidden = len(cards[seat])
        else:
            own = tuple(cards[seat])
    revealed: dict[int, tuple[str, ...]] = {}
    if h.special == "eleven" and team == h.eleven_side and not h.over:
        for x in h.order:
            if x != seat and teams[x] == team:
                revealed[x] = tuple(cards[x])
    tricks = tuple([_trick_view(t, seat) for t in h.tricks])
    pending = pending_call(state)
    awaited = to_act(state)
    legal = legal_tuple(state, seat) if seat is not None else ()
    shape = V.shape_of(r)
    obs: Observation = _new_observation(  # the fields in their declared order (views.Observation)
        seat,
        team,
        r.name,
        r.players,
        state.phase,
        state.game,
        h.number,
        h.dealer,
        h.mano,
        h.turn_up,
        _SPECIAL[h.special],
        own,
        hidden,
        tuple(map(len, cards)),
        revealed,
        tricks,
        teams,
        tuple(state.scores),
        tuple(state.games),
        h.value,
        pending,
        awaited,
        legal,
        state.actions,
        state.winner,
        shape.carancho(h),
        shape.head_to_head(state, h),
        S.hand_wins_game(state, h),
    )
    return obs


_new_observation = positional_new(Observation)
_SPECIAL: dict[str, Special | None] = {"": None, **{m.value: m for m in Special}}


def pending_call(state: MatchState) -> PendingCall | None:
    """The call awaiting an answer (a hand of eleven's decision, a bet, a truco), or ``None``:
    what :func:`observe` shows as ``pending``, for every viewer alike."""
    if state.phase is not Phase.PLAY or state.hand is None:
        return None
    h = state.hand
    r = state.rules
    b = h.bet
    c = h.truco
    if h.eleven_decider is not None:
        return PendingCall(
            family=CallFamily.HAND_OF_ELEVEN,
            name="hand_of_eleven",
            caller=None,
            responder=h.eleven_decider,
            value_if_accepted=r.hand_of_eleven_value,
            value_if_declined=r.hand_of_eleven_refusal,
        )
    if b is not None:
        accepted, declined = S.bet_values(state, b)
        return PendingCall(
            family=b.family,
            name=b.chain[-1],
            caller=b.caller,
            responder=b.responder,
            value_if_accepted=accepted,
            value_if_declined=declined,
        )
    if c is not None:
        return PendingCall(
            family=CallFamily.TRUCO,
            name=c.chain[-1],
            caller=c.caller,
            responder=c.responder,
            value_if_accepted=S.ladder_value(state, c.level),
            value_if_declined=h.value,
        )
    return None


def _trick_view(t: Trick, seat: int | None) -> TrickView:
    """One trick as ``seat`` sees it: a face-down card only to whoever played it. The view of
    a finished trick without face-down cards is the same for everybody and is kept."""
    view = t.view
    if view is not None:
        return view
    down = False
    plays = []
    for x, c, d in t.plays:
        if d:
            down = True
            plays.append(PlayView(seat=x, card=c if x == seat else None, face_down=True))
        else:
            plays.append(PlayView(seat=x, card=c, face_down=False))
    view = TrickView(
        leader=t.leader, plays=tuple(plays), winner_seat=t.winner, winner_team=t.side, tied=t.tied
    )
    if not down and (t.tied or t.winner is not None):
        t.view = view  # finished tricks never change (they are shared between states)
    return view

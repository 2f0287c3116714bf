"""What one viewer sees of a match at one version (the payload of every observation on the
wire): the engine's observation, the version and the match's lifecycle state."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import truco_engine as te
from truco_contract.events import MatchStatus


@dataclass(frozen=True, slots=True)
class SeatView:
    """A seat's (or a spectator's) observation at ``version``."""

    observation: te.Observation
    version: int
    match_state: MatchStatus


def view(state: te.MatchState, seat: int | None, version: int, match_state: MatchStatus) -> SeatView:
    """What ``seat`` (``None``: a spectator) sees of ``state`` at ``version``. A match that
    is no longer active awaits nobody and offers no action."""
    obs = te.observe(state, seat)
    if match_state is not MatchStatus.ACTIVE and (obs.legal_actions or obs.awaited):
        obs = dataclasses.replace(obs, legal_actions=(), awaited=())
    return SeatView(obs, version, match_state)

"""An action spends its seat's rate of actions once, whatever its outcome: by its commit where
the store can (one Redis server: no call of its own), else before it (the embedded store);
an action that never commits -- refused by the rules, or a retry answered from its record --
spends it too, and one over the rate is refused with nothing written (over both stores)."""

from __future__ import annotations

import pytest

from tests.service.test_service import cred, view_of
from truco_server.app.wiring import Services
from truco_server.core import errors as E
from truco_server.core import requests as T
from truco_server.core.caller import Operator
from truco_server.core.config import Settings
from truco_server.services.quotas import Quotas

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def test_an_action_spends_its_seats_rate_once_whatever_its_outcome(
    service: Services, operator: Operator
) -> None:
    quotas = Quotas(Settings(quota_actions_per_second=0.001), service.store.quotas)  # a burst of one
    created = await service.steps.create_match(operator, T.CreateMatchRequest(preset="paulista-2p"))
    mid, tokens = created.match.match_id, created.seat_tokens
    seat = (await view_of(service, mid, tokens[0])).observation.awaited[0]
    other = 1 - seat
    view = await view_of(service, mid, tokens[seat])
    legal, version = view.observation.legal_actions[0], view.version

    # the waiting seat's action is refused by the rules, and spends that seat's rate
    with pytest.raises(E.ServiceError) as illegal:
        await service.matches.submit_action(
            cred(tokens[other]),
            T.SubmitActionRequest(mid, legal, "o1", None),
            quotas.action_charge(tokens[other]),
        )
    assert not isinstance(illegal.value, E.QuotaExceeded)
    with pytest.raises(E.QuotaExceeded):
        await service.matches.submit_action(
            cred(tokens[other]),
            T.SubmitActionRequest(mid, legal, "o2", None),
            quotas.action_charge(tokens[other]),
        )

    # the acting seat's action is applied (and spends its rate: by the commit on Redis)
    done = await service.matches.submit_action(
        cred(tokens[seat]),
        T.SubmitActionRequest(mid, legal, "s1", version),
        quotas.action_charge(tokens[seat]),
    )
    assert done.version > version
    wait = await service.store.quotas.take(quotas.action_charge(tokens[seat]).rate.key, 0.001, 1)  # type: ignore[union-attr]
    assert wait > 100  # spent: the next one would wait about 1000 s

    # a retry of it is answered from its record, and is over the rate like any other action
    with pytest.raises(E.QuotaExceeded):
        await service.matches.submit_action(
            cred(tokens[seat]),
            T.SubmitActionRequest(mid, legal, "s1", version),
            quotas.action_charge(tokens[seat]),
        )
    assert (await view_of(service, mid, tokens[seat])).version == done.version  # nothing written

    # the other seat's turn now: its legal action is over its rate, refused with nothing written
    view = await view_of(service, mid, tokens[other])
    assert tuple(view.observation.awaited) == (other,)
    with pytest.raises(E.QuotaExceeded):
        await service.matches.submit_action(
            cred(tokens[other]),
            T.SubmitActionRequest(mid, view.observation.legal_actions[0], "o3", view.version),
            quotas.action_charge(tokens[other]),
        )
    assert (await view_of(service, mid, tokens[other])).version == view.version

"""``truco.v1.OperatorService`` in messages, shared by gRPC and REST (like :mod:`.wire`).

Every RPC takes the operator's API key and sees only that operator's events and webhooks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from google.protobuf import timestamp_pb2

from truco_contract import codec
from truco_contract.pb import operator_service_pb2
from truco_server.api.auth import Authenticator
from truco_server.api.matches import StreamTracker
from truco_server.core import errors as E
from truco_server.core.caller import Credentials
from truco_server.services.operators import Operators, WebhookInfo
from truco_server.services.webhooks import Delivery, DeliveryState

pb = operator_service_pb2

_STATES = {
    DeliveryState.PENDING: pb.DELIVERY_STATE_PENDING,
    DeliveryState.DELIVERED: pb.DELIVERY_STATE_DELIVERED,
    DeliveryState.FAILED: pb.DELIVERY_STATE_FAILED,
}
_STATE_OF = {v: k for k, v in _STATES.items()}


def _ts(seconds: float) -> timestamp_pb2.Timestamp:
    t = timestamp_pb2.Timestamp()
    t.FromNanoseconds(round(seconds * 1e9))
    return t


def webhook_to_proto(h: WebhookInfo, *, with_secret: bool = False) -> operator_service_pb2.Webhook:
    return pb.Webhook(
        webhook_id=h.webhook_id,
        url=h.url,
        event_types=list(h.event_types),
        secret=h.secret if with_secret else "",
        create_time=_ts(h.created_at),
        description=h.description,
    )


def delivery_to_proto(d: Delivery) -> operator_service_pb2.WebhookDelivery:
    m = pb.WebhookDelivery(
        id=d.event_id,
        type=d.type,
        state=_STATES[d.state],
        attempts=d.attempts,
        last_status=d.last_status,
        last_error=d.last_error,
        event_time=_ts(d.event_time),
    )
    if d.state is DeliveryState.PENDING and d.next_attempt:
        m.next_attempt_time.CopyFrom(_ts(d.next_attempt))
    return m


class OperatorApi:
    """``truco.v1.OperatorService`` over :class:`~truco_server.services.operators.Operators`."""

    def __init__(
        self, operators: Operators, auth: Authenticator, streams: StreamTracker | None = None
    ) -> None:
        self.operators = operators
        self.auth = auth
        self.streams = streams

    async def StreamOperatorEvents(
        self, creds: Credentials, request: pb.StreamOperatorEventsRequest
    ) -> AsyncIterator[pb.StreamOperatorEventsResponse]:
        operator = self.auth.operator(creds)
        types = list(request.event_types)
        if self.streams is None:
            async for ev in self.operators.stream(operator, request.from_cursor, types):
                yield self._message(ev)
            return
        async with self.streams.track():
            async for ev in self.operators.stream(operator, request.from_cursor, types):
                yield self._message(ev)

    @staticmethod
    def _message(ev: object) -> pb.StreamOperatorEventsResponse:
        if ev is None:
            beat = timestamp_pb2.Timestamp()
            beat.GetCurrentTime()
            return pb.StreamOperatorEventsResponse(heartbeat=beat)
        return pb.StreamOperatorEventsResponse(event=codec.operator_event_to_proto(ev))  # type: ignore[arg-type]

    async def CreateWebhook(
        self, creds: Credentials, request: pb.CreateWebhookRequest
    ) -> pb.CreateWebhookResponse:
        operator = self.auth.operator(creds)
        if not request.url:
            raise E.InvalidArgument("url is required", field_violations=[E.FieldViolation("url", "required")])
        hook = await self.operators.create_webhook(
            operator, request.url, list(request.event_types), request.description
        )
        return pb.CreateWebhookResponse(webhook=webhook_to_proto(hook, with_secret=True))

    async def ListWebhooks(
        self, creds: Credentials, request: pb.ListWebhooksRequest
    ) -> pb.ListWebhooksResponse:
        operator = self.auth.operator(creds)
        hooks = await self.operators.list_webhooks(operator)
        return pb.ListWebhooksResponse(webhooks=[webhook_to_proto(h) for h in hooks])

    async def DeleteWebhook(
        self, creds: Credentials, request: pb.DeleteWebhookRequest
    ) -> pb.DeleteWebhookResponse:
        operator = self.auth.operator(creds)
        await self.operators.delete_webhook(operator, _webhook_id(request.webhook_id))
        return pb.DeleteWebhookResponse()

    async def ListWebhookDeliveries(
        self, creds: Credentials, request: pb.ListWebhookDeliveriesRequest
    ) -> pb.ListWebhookDeliveriesResponse:
        operator = self.auth.operator(creds)
        state = None
        if request.state != pb.DELIVERY_STATE_UNSPECIFIED:
            state = _STATE_OF.get(request.state)
            if state is None:
                raise E.InvalidArgument(
                    f"unknown delivery state {request.state}",
                    field_violations=[E.FieldViolation("state", "unknown value")],
                )
        if request.page_size < 0:
            raise E.InvalidArgument(
                "page_size must not be negative", field_violations=[E.FieldViolation("page_size", "negative")]
            )
        found = await self.operators.list_deliveries(
            operator, _webhook_id(request.webhook_id), state, request.page_size
        )
        return pb.ListWebhookDeliveriesResponse(deliveries=[delivery_to_proto(d) for d in found])


def _webhook_id(value: str) -> str:
    if not value:
        raise E.InvalidArgument(
            "webhook_id is required", field_violations=[E.FieldViolation("webhook_id", "required")]
        )
    return value

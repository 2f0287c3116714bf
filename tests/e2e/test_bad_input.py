"""Bad-input sweep over real gRPC (Redis store, two operator API keys configured).

Every malformed or illegal request of every RPC must get the right status code and
``google.rpc`` details -- never INTERNAL -- and must not change any match (the versions
of both test matches are compared before and after each call).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
import pytest_asyncio
from google.protobuf import struct_pb2

from tests.e2e.client import Created, Player, RichError, Stub, act, bearer, create, rich
from tests.e2e.conftest import WorkerFactory
from truco_contract.pb import action_pb2, match_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_server.core.config import ApiKey

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(20)]

KEY_ACME = "acme-secret-1"
KEY_OTHER = "other-secret-2"
G = grpc.StatusCode


@dataclass
class Ctx:
    stub: Stub
    a: Created  # owned by acme, a few actions in
    b: Created  # owned by other
    to_act: int
    idle: int
    legal: list[action_pb2.Action]
    hand: list[str]
    deck_card_not_in_hand: str
    used_request_id: str
    used_action: action_pb2.Action | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def token(self, seat: int) -> list[tuple[str, str]]:
        return bearer(self.a.tokens[seat])


@pytest_asyncio.fixture
async def ctx(make_worker: WorkerFactory) -> AsyncIterator[Ctx]:
    keys = (ApiKey("acme", KEY_ACME), ApiKey("other", KEY_OTHER))
    async with make_worker(api_keys=keys) as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        stub = Stub(ch)
        a = await create(stub, "paulista", 2, api_key=KEY_ACME)
        b = await create(stub, "argentine", 2, api_key=KEY_OTHER)
        player = Player(stub, a, random.Random(5))
        await player.step()
        view = await stub.GetMatch(MS.GetMatchRequest(match_id=a.match_id), metadata=bearer(KEY_ACME))
        to_act = view.observation.awaited[0]
        mine = await stub.GetMatch(MS.GetMatchRequest(match_id=a.match_id), metadata=bearer(a.tokens[to_act]))
        hand = list(mine.observation.hand)
        deck = [f"{r}{s}" for r in "4567QJKA23" for s in "DSHC"]
        outside = next(c for c in deck if c not in hand)
        yield Ctx(
            stub,
            a,
            b,
            to_act,
            1 - to_act,
            list(mine.observation.legal_actions),
            hand,
            outside,
            used_request_id=f"{a.match_id}-a0",
        )


async def versions(c: Ctx) -> tuple[int, int]:
    va = await c.stub.GetMatch(MS.GetMatchRequest(match_id=c.a.match_id), metadata=bearer(KEY_ACME))
    vb = await c.stub.GetMatch(MS.GetMatchRequest(match_id=c.b.match_id), metadata=bearer(KEY_OTHER))
    return va.match.version, vb.match.version


def play(card: str = "", **kw: Any) -> action_pb2.Action:
    return action_pb2.Action(play_card=action_pb2.PlayCard(card=card, **kw))


async def drain(call: Any) -> None:
    async for _ in call:
        break


def stream(c: Ctx, metadata: Any, match_id: str | None = None, **kw: Any) -> Awaitable[None]:
    req = MS.StreamObservationsRequest(match_id=c.a.match_id if match_id is None else match_id, **kw)
    return drain(c.stub.StreamObservations(req, metadata=metadata, timeout=5))


def submit(c: Ctx, action: action_pb2.Action | None, metadata: Any = None, **kw: Any) -> Awaitable[Any]:
    req = MS.SubmitActionRequest(match_id=kw.pop("match_id", c.a.match_id), **kw)
    if action is not None:
        req.action.CopyFrom(action)
    md = c.token(c.to_act) if metadata is None else metadata
    return c.stub.SubmitAction(req, metadata=md, timeout=5)


def create_req(c: Ctx, metadata: Any = None, **kw: Any) -> Awaitable[Any]:
    md = bearer(KEY_ACME) if metadata is None else metadata
    return c.stub.CreateMatch(MS.CreateMatchRequest(**kw), metadata=md, timeout=5)


def overrides(**values: Any) -> match_pb2.RuleSet:
    s = struct_pb2.Struct()
    s.update(values)
    return match_pb2.RuleSet(preset="paulista", overrides=s)


def tampered(token: str) -> str:
    return token[:-4] + ("0000" if not token.endswith("0000") else "1111")


@dataclass
class Case:
    name: str
    call: Callable[[Ctx], Awaitable[Any]]
    code: G
    reason: str
    field: str | None = None
    check: Callable[[RichError, Ctx], None] | None = None


def legal_listed(e: RichError, c: Ctx) -> None:
    assert e.illegal is not None
    assert list(e.illegal.legal_actions) == c.legal and e.illegal.legal_actions
    assert e.illegal.current_version > 0


def names_field(text: str) -> Callable[[RichError, Ctx], None]:
    def check(e: RichError, c: Ctx) -> None:
        assert text in e.message

    return check


CASES = [
    # --- CreateMatch
    Case("create/no-key", lambda c: create_req(c, metadata=[]), G.UNAUTHENTICATED, "MISSING_CREDENTIAL"),
    Case(
        "create/unknown-key", lambda c: create_req(c, bearer("nope")), G.UNAUTHENTICATED, "INVALID_CREDENTIAL"
    ),
    Case(
        "create/seat-token-as-key",
        lambda c: create_req(c, bearer(c.a.tokens[0])),
        G.UNAUTHENTICATED,
        "WRONG_CREDENTIAL_KIND",
    ),
    Case(
        "create/bad-preset",
        lambda c: create_req(c, rules=match_pb2.RuleSet(preset="bogus")),
        G.INVALID_ARGUMENT,
        "INVALID_RULES",
        "preset",
    ),
    Case(
        "create/bad-override-value",
        lambda c: create_req(c, rules=overrides(target_points=-3)),
        G.INVALID_ARGUMENT,
        "INVALID_RULES",
        "target_points",
    ),
    Case(
        "create/unknown-override",
        lambda c: create_req(c, rules=overrides(no_such_rule=1)),
        G.INVALID_ARGUMENT,
        "INVALID_RULES",
        "no_such_rule",
    ),
    Case(
        "create/override-wrong-type",
        lambda c: create_req(c, rules=overrides(envido="yes please")),
        G.INVALID_ARGUMENT,
        "INVALID_RULES",
        "envido",
    ),
    Case(
        "create/bad-player-count",
        lambda c: create_req(c, rules=match_pb2.RuleSet(preset="paulista"), players=7),
        G.INVALID_ARGUMENT,
        "INVALID_RULES",
        "players",
    ),
    Case(
        "create/negative-players",
        lambda c: create_req(c, rules=match_pb2.RuleSet(preset="paulista"), players=-2),
        G.INVALID_ARGUMENT,
        "INVALID_RULES",
        "players",
    ),
    Case(
        "create/seat-count-mismatch",
        lambda c: create_req(c, players=2, seats=[match_pb2.SeatSpec(display_name="x")]),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "seats",
    ),
    Case(
        "create/short-seed",
        lambda c: create_req(c, players=2, seed=b"abc"),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "seed",
    ),
    Case(
        "create/bad-deck-order",
        lambda c: create_req(c, players=2, deck_orders=[match_pb2.DeckOrder(cards=["4C", "4C"])]),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "deck_orders[0]",
    ),
    # --- SubmitAction: malformed
    Case(
        "act/missing-match-id",
        lambda c: submit(c, play("4C"), match_id=""),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "match_id",
    ),
    Case(
        "act/unknown-match",
        lambda c: submit(c, play("4C"), match_id="m-nope"),
        G.UNAUTHENTICATED,  # a match credential never tells an unknown match
        "INVALID_CREDENTIAL",
    ),
    Case("act/empty-action", lambda c: submit(c, None), G.INVALID_ARGUMENT, "INVALID_REQUEST", "action"),
    Case(
        "act/empty-card",
        lambda c: submit(c, play("")),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "action.play_card.card",
    ),
    Case(
        "act/unknown-card-code",
        lambda c: submit(c, play("ZZ")),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "action.play_card.card",
    ),
    Case(
        "act/spanish-card-in-french-deck",
        lambda c: submit(c, play("1e")),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "action.play_card.card",
    ),
    Case(
        "act/card-and-slot",
        lambda c: submit(c, play("4C", slot=0)),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "action.play_card",
    ),
    Case(
        "act/negative-slot",
        lambda c: submit(c, play(slot=-1)),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "action.play_card.slot",
    ),
    Case(
        "act/envido-kind-unspecified",
        lambda c: submit(c, action_pb2.Action(call_envido=action_pb2.CallEnvido())),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "action.call_envido.kind",
    ),
    Case(
        "act/flor-kind-unspecified",
        lambda c: submit(c, action_pb2.Action(call_flor=action_pb2.CallFlor())),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "action.call_flor.kind",
    ),
    Case(
        "act/discard-without-card",
        lambda c: submit(c, action_pb2.Action(discard=action_pb2.Discard())),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "action.discard.card",
    ),
    # --- SubmitAction: well-formed but illegal
    Case(
        "act/illegal-accept",
        lambda c: submit(c, action_pb2.Action(accept=action_pb2.Accept())),
        G.FAILED_PRECONDITION,
        "ILLEGAL_ACTION",
        check=legal_listed,
    ),
    Case(
        "act/card-not-in-hand",
        lambda c: submit(c, play(c.deck_card_not_in_hand)),
        G.FAILED_PRECONDITION,
        "ILLEGAL_ACTION",
        check=legal_listed,
    ),
    Case(
        "act/envido-in-paulista",
        lambda c: submit(c, action_pb2.Action(call_envido=action_pb2.CallEnvido(kind=1))),
        G.FAILED_PRECONDITION,
        "ILLEGAL_ACTION",
        check=legal_listed,
    ),
    Case(
        "act/not-your-turn",
        # (paulista lets a seat call truco out of turn, never fold out of turn)
        lambda c: submit(c, action_pb2.Action(fold=action_pb2.Fold()), c.token(c.idle)),
        G.FAILED_PRECONDITION,
        "NOT_YOUR_TURN",
    ),
    Case(
        "act/request-id-reused-for-other-action",
        lambda c: submit(c, action_pb2.Action(fold=action_pb2.Fold()), request_id=c.used_request_id),
        G.ALREADY_EXISTS,
        "REQUEST_ID_REUSED",
    ),
    Case(
        "act/stale-version", lambda c: submit(c, c.legal[0], expected_version=1), G.ABORTED, "STALE_VERSION"
    ),
    Case(
        "act/future-version",
        lambda c: submit(c, c.legal[0], expected_version=10_000),
        G.ABORTED,
        "STALE_VERSION",
    ),
    # --- SubmitAction: credentials
    Case("act/no-credential", lambda c: submit(c, c.legal[0], []), G.UNAUTHENTICATED, "MISSING_CREDENTIAL"),
    Case(
        "act/tampered-credential",
        lambda c: submit(c, c.legal[0], bearer(tampered(c.a.tokens[c.to_act]))),
        G.UNAUTHENTICATED,
        "INVALID_CREDENTIAL",
    ),
    Case(
        "act/malformed-credential",
        lambda c: submit(c, c.legal[0], bearer(f"tc1.{c.a.match_id}.9.xx")),
        G.UNAUTHENTICATED,
        "MALFORMED_CREDENTIAL",
        check=names_field("40 lower-case hex digits"),
    ),
    Case(
        "act/seat-the-match-has-not",  # well formed: answered like a bad signature
        lambda c: submit(c, c.legal[0], bearer(f"tc1.{c.a.match_id}.9.{'0' * 40}")),
        G.UNAUTHENTICATED,
        "INVALID_CREDENTIAL",
        check=names_field("not a valid seat or spectator token of this match"),
    ),
    Case(
        "act/other-match-credential",
        lambda c: submit(c, c.legal[0], bearer(c.b.tokens[0])),
        G.UNAUTHENTICATED,
        "INVALID_CREDENTIAL",
    ),
    Case(
        "act/operator-key",
        lambda c: submit(c, c.legal[0], bearer(KEY_ACME)),
        G.UNAUTHENTICATED,
        "WRONG_CREDENTIAL_KIND",
    ),
    Case(
        "act/spectator",
        lambda c: submit(c, c.legal[0], bearer(c.a.spectator)),
        G.PERMISSION_DENIED,
        "PERMISSION_DENIED",
    ),
    # --- StreamObservations
    Case(
        "stream/missing-match-id",
        lambda c: stream(c, c.token(0), match_id=""),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "match_id",
    ),
    Case(
        "stream/unknown-match",
        lambda c: stream(c, bearer(f"tc1.m-nope.0.{'0' * 40}"), match_id="m-nope"),
        G.UNAUTHENTICATED,  # a match credential never tells an unknown match
        "INVALID_CREDENTIAL",
        check=names_field("not a valid seat or spectator token of this match"),
    ),
    Case(
        "stream/credential-of-another-match-id",
        lambda c: stream(c, c.token(0), match_id="m-nope"),
        G.UNAUTHENTICATED,
        "INVALID_CREDENTIAL",
        check=names_field("a credential of match"),
    ),
    Case(
        "stream/from-version-beyond",
        lambda c: stream(c, c.token(0), from_version=10_000),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "from_version",
    ),
    Case(
        "stream/negative-from-version",
        lambda c: stream(c, c.token(0), from_version=-1),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "from_version",
    ),
    Case("stream/no-credential", lambda c: stream(c, []), G.UNAUTHENTICATED, "MISSING_CREDENTIAL"),
    Case(
        "stream/tampered",
        lambda c: stream(c, bearer(tampered(c.a.spectator))),
        G.UNAUTHENTICATED,
        "INVALID_CREDENTIAL",
    ),
    Case(
        "stream/other-match-credential",
        lambda c: stream(c, bearer(c.b.spectator)),
        G.UNAUTHENTICATED,
        "INVALID_CREDENTIAL",
    ),
    Case(
        "stream/other-operator",
        lambda c: stream(c, bearer(KEY_OTHER)),
        G.NOT_FOUND,
        "MATCH_NOT_FOUND",
    ),
    Case("stream/unknown-key", lambda c: stream(c, bearer("nope")), G.UNAUTHENTICATED, "INVALID_CREDENTIAL"),
    # --- GetMatch
    Case(
        "get/missing-match-id",
        lambda c: c.stub.GetMatch(MS.GetMatchRequest(), metadata=c.token(0)),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "match_id",
    ),
    Case(
        "get/unknown-match",
        lambda c: c.stub.GetMatch(MS.GetMatchRequest(match_id="m-nope"), metadata=bearer(KEY_ACME)),
        G.NOT_FOUND,
        "MATCH_NOT_FOUND",
    ),
    Case(
        "get/other-operator",
        lambda c: c.stub.GetMatch(MS.GetMatchRequest(match_id=c.a.match_id), metadata=bearer(KEY_OTHER)),
        G.NOT_FOUND,
        "MATCH_NOT_FOUND",
    ),
    Case(
        "get/other-match-credential",
        lambda c: c.stub.GetMatch(MS.GetMatchRequest(match_id=c.a.match_id), metadata=bearer(c.b.tokens[1])),
        G.UNAUTHENTICATED,
        "INVALID_CREDENTIAL",
    ),
    Case(
        "get/no-credential",
        lambda c: c.stub.GetMatch(MS.GetMatchRequest(match_id=c.a.match_id)),
        G.UNAUTHENTICATED,
        "MISSING_CREDENTIAL",
    ),
    # --- ListMatches
    Case(
        "list/negative-page-size",
        lambda c: c.stub.ListMatches(MS.ListMatchesRequest(page_size=-1), metadata=bearer(KEY_ACME)),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "page_size",
    ),
    Case(
        "list/bad-page-token",
        lambda c: c.stub.ListMatches(MS.ListMatchesRequest(page_token="garbage!"), metadata=bearer(KEY_ACME)),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "page_token",
    ),
    Case(
        "list/unknown-state",
        lambda c: c.stub.ListMatches(MS.ListMatchesRequest(state=99), metadata=bearer(KEY_ACME)),  # type: ignore[arg-type]
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "state",
    ),
    Case(
        "list/no-key",
        lambda c: c.stub.ListMatches(MS.ListMatchesRequest()),
        G.UNAUTHENTICATED,
        "MISSING_CREDENTIAL",
    ),
    Case(
        "list/seat-token",
        lambda c: c.stub.ListMatches(MS.ListMatchesRequest(), metadata=c.token(0)),
        G.UNAUTHENTICATED,
        "WRONG_CREDENTIAL_KIND",
    ),
    # --- CancelMatch
    Case(
        "cancel/other-operator",
        lambda c: c.stub.CancelMatch(
            MS.CancelMatchRequest(match_id=c.a.match_id), metadata=bearer(KEY_OTHER)
        ),
        G.NOT_FOUND,
        "MATCH_NOT_FOUND",
    ),
    Case(
        "cancel/missing-match-id",
        lambda c: c.stub.CancelMatch(MS.CancelMatchRequest(), metadata=bearer(KEY_ACME)),
        G.INVALID_ARGUMENT,
        "INVALID_REQUEST",
        "match_id",
    ),
    Case(
        "cancel/unknown-match",
        lambda c: c.stub.CancelMatch(MS.CancelMatchRequest(match_id="m-nope"), metadata=bearer(KEY_ACME)),
        G.NOT_FOUND,
        "MATCH_NOT_FOUND",
    ),
    Case(
        "cancel/no-key",
        lambda c: c.stub.CancelMatch(MS.CancelMatchRequest(match_id=c.a.match_id)),
        G.UNAUTHENTICATED,
        "MISSING_CREDENTIAL",
    ),
    Case(
        "cancel/seat-token",
        lambda c: c.stub.CancelMatch(MS.CancelMatchRequest(match_id=c.a.match_id), metadata=c.token(0)),
        G.UNAUTHENTICATED,
        "WRONG_CREDENTIAL_KIND",
    ),
    Case(
        "cancel/spectator-token",
        lambda c: c.stub.CancelMatch(
            MS.CancelMatchRequest(match_id=c.a.match_id), metadata=bearer(c.a.spectator)
        ),
        G.UNAUTHENTICATED,
        "WRONG_CREDENTIAL_KIND",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_bad_request_is_refused_without_state_change(ctx: Ctx, case: Case) -> None:
    before = await versions(ctx)
    with pytest.raises(grpc.aio.AioRpcError) as exc:
        await case.call(ctx)
    e = rich(exc.value)
    assert e.code != G.INTERNAL and e.code != G.UNKNOWN
    assert e.code == case.code, (e.code, e.message)
    assert e.info is not None and e.info.domain == "truco.v1"
    assert e.reason == case.reason, (e.reason, e.message)
    if case.code == G.INVALID_ARGUMENT:
        assert e.bad_request is not None
    if case.field is not None:
        assert case.field in e.fields, (e.fields, e.message)
    if case.code in (G.FAILED_PRECONDITION, G.ABORTED):
        assert e.illegal is not None and e.illegal.current_version == before[0]
    if case.check is not None:
        case.check(e, ctx)
    # no card of the acting seat's hand is named to anyone else in an error
    if case.name.startswith("act/") and case.code != G.FAILED_PRECONDITION:
        assert not set(ctx.hand) & set(e.message.replace(",", " ").replace("'", " ").split())
    assert await versions(ctx) == before


async def test_finished_or_cancelled_match_refuses_actions(ctx: Ctx) -> None:
    c = ctx
    done = await c.stub.CancelMatch(
        MS.CancelMatchRequest(match_id=c.a.match_id, reason="sweep"), metadata=bearer(KEY_ACME)
    )
    assert done.match.state == match_pb2.MATCH_STATE_CANCELLED
    before = await versions(c)
    with pytest.raises(grpc.aio.AioRpcError) as exc:
        await act(c.stub, c.a.match_id, c.a.tokens[c.to_act], c.legal[0])
    e = rich(exc.value)
    assert e.code == G.FAILED_PRECONDITION and e.reason == "MATCH_NOT_ACTIVE"
    # cancelling again is idempotent: the same cancelled match, nothing written
    again = await c.stub.CancelMatch(MS.CancelMatchRequest(match_id=c.a.match_id), metadata=bearer(KEY_ACME))
    assert again.match.state == match_pb2.MATCH_STATE_CANCELLED and again.match.version == done.match.version
    assert await versions(c) == before
    # the already-applied first action is still answered from the idempotency record
    view = await c.stub.GetMatch(MS.GetMatchRequest(match_id=c.a.match_id), metadata=c.token(0))
    assert (
        view.observation.match_state == match_pb2.MATCH_STATE_CANCELLED and not view.observation.legal_actions
    )


async def test_unauthenticated_create_in_open_mode_is_allowed(make_worker: WorkerFactory) -> None:
    """Without API keys the worker runs open: anyone is the operator 'public'."""
    async with make_worker() as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        stub = Stub(ch)
        m = await create(stub, "paulista", 2)
        listed = await stub.ListMatches(MS.ListMatchesRequest())
        assert [x.match_id for x in listed.matches] == [m.match_id]


async def test_labels_round_trip_and_a_bad_clock_is_refused(make_worker: WorkerFactory) -> None:
    """Labels round-trip through Match.settings; ``turn_timeout`` is the shorthand of a clock
    with only ``per_decision``; a clock too short to play is INVALID_ARGUMENT naming the field."""
    from google.protobuf import duration_pb2

    async with make_worker() as w, grpc.aio.insecure_channel(w.grpc_address) as ch:
        stub = Stub(ch)
        made = await stub.CreateMatch(
            MS.CreateMatchRequest(
                rules=match_pb2.RuleSet(preset="paulista"),
                players=2,
                settings=match_pb2.MatchSettings(
                    labels={"table": "7", "league": "north"},
                    turn_timeout=duration_pb2.Duration(seconds=30),
                ),
            )
        )
        assert dict(made.match.settings.labels) == {"table": "7", "league": "north"}
        got = await stub.GetMatch(
            MS.GetMatchRequest(match_id=made.match.match_id), metadata=bearer(made.spectator_token)
        )
        assert dict(got.match.settings.labels) == {"table": "7", "league": "north"}
        assert got.match.settings.time_control.per_decision.seconds == 30
        with pytest.raises(grpc.aio.AioRpcError) as exc:
            await stub.CreateMatch(
                MS.CreateMatchRequest(
                    rules=match_pb2.RuleSet(preset="paulista"),
                    players=2,
                    settings=match_pb2.MatchSettings(turn_timeout=duration_pb2.Duration(nanos=500_000_000)),
                )
            )
        e = rich(exc.value)
        assert e.code == grpc.StatusCode.INVALID_ARGUMENT
        assert "settings.time_control.per_decision" in e.fields
        listed = await stub.ListMatches(MS.ListMatchesRequest())
        assert [x.match_id for x in listed.matches] == [made.match.match_id]

"""Finding 5 (credentials): a seat's credential can be re-issued (the old one is refused on
every worker, open streams and player-connection subscriptions end with UNAUTHENTICATED, a
retried re-issue returns the same token), credentials may expire (``credential_ttl``, on an
injectable clock), and operator keys rotate without a restart (``TRUCO_API_KEYS_FILE``).

Two workers on one real ``redis-server`` for the re-issue: the re-issue goes through A while B
holds the match in its caches, so B must learn it from the store, not from its memory."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import grpc
import pytest
from prometheus_client import REGISTRY

from tests.e2e.client import Stub, bearer, create
from tests.e2e.conftest import WorkerFactory
from tests.hardening.helpers import details
from tests.helpers.clock import FakeClock
from tests.helpers.serve import serve_apart
from tests.rest.helpers import call, sse_events
from truco_contract.pb import match_pb2
from truco_contract.pb import match_service_pb2 as MS
from truco_match.credentials import MalformedCredential, issue, parts
from truco_server.api import limits
from truco_server.api.auth import Authenticator, KeyRing
from truco_server.app.wiring import apis, build_services
from truco_server.core.caller import Credentials
from truco_server.core.config import ApiKey, ConfigError, Settings
from truco_server.core.errors import CredentialNotValid, ExpiredCredential, ServiceError
from truco_server.services.steps import reissue_key
from truco_server.stores import open_store

pytestmark = [pytest.mark.timeout(120)]

KEY = "k-acme-secret"
OTHER = "k-other-secret"
KEYS = (ApiKey("acme", KEY), ApiKey("other", OTHER))
UNAUTH = grpc.StatusCode.UNAUTHENTICATED


def forged(match_id: str, seat: int) -> str:
    """A well-formed credential of a real match with a made-up MAC."""
    return f"tc1.{match_id}.{seat}.{'0' * 40}"


async def refusal(call_: Any) -> tuple[grpc.StatusCode, str, str | None]:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call_
    d = details(caught.value)
    return d.code, d.message, d.reason


async def reissue(stub: Stub, match_id: str, key: str = KEY, **fields: Any) -> MS.ReissueCredentialResponse:
    req = MS.ReissueCredentialRequest(match_id=match_id, **fields)
    return await stub.ReissueCredential(req, metadata=bearer(key), timeout=10)


async def legal_action(stub: Stub, match_id: str, tokens: list[str]) -> tuple[int, MS.SubmitActionRequest]:
    seen = await stub.GetMatch(MS.GetMatchRequest(match_id=match_id), metadata=bearer(tokens[0]))
    seat = seen.observation.awaited[0]
    mine = await stub.GetMatch(MS.GetMatchRequest(match_id=match_id), metadata=bearer(tokens[seat]))
    action = mine.observation.legal_actions[0]
    return seat, MS.SubmitActionRequest(
        match_id=match_id, action=action, expected_version=mine.observation.version
    )


@asynccontextmanager
async def two_workers(make_worker: WorkerFactory) -> AsyncIterator[tuple[Stub, Stub, str, grpc.aio.Channel]]:
    async with (
        make_worker(api_keys=KEYS, heartbeat_interval_seconds=0.5) as a,
        make_worker(api_keys=KEYS, heartbeat_interval_seconds=0.5) as b,
        grpc.aio.insecure_channel(a.grpc_address) as cha,
        grpc.aio.insecure_channel(b.grpc_address) as chb,
    ):
        assert b.http_port
        yield Stub(cha), Stub(chb), f"http://127.0.0.1:{b.http_port}", chb


# ----------------------------------------------------------------------- re-issue
async def test_a_reissued_credential_is_refused_on_a_worker_that_cached_the_match(
    make_worker: WorkerFactory,
) -> None:
    async with two_workers(make_worker) as (a, b, _, _ch):
        m = await create(a, "paulista", api_key=KEY, request_id="table-1")
        seat, act = await legal_action(b, m.match_id, m.tokens)  # B has the match in its cache
        bad = await refusal(b.SubmitAction(act, metadata=bearer(forged(m.match_id, seat))))

        new = await reissue(a, m.match_id, seat=seat)
        assert new.token != m.tokens[seat] and new.seat == seat and new.version == m.version + 1

        # the old credential, on the worker whose cache predates the re-issue: refused exactly
        # like a made-up one (code, message and reason), for acting and for reading
        assert await refusal(b.SubmitAction(act, metadata=bearer(m.tokens[seat]))) == bad
        get = MS.GetMatchRequest(match_id=m.match_id)
        assert (await refusal(b.GetMatch(get, metadata=bearer(m.tokens[seat]))))[0] == UNAUTH
        join = MS.JoinMatchRequest(match_id=m.match_id)
        assert (await refusal(b.JoinMatch(join, metadata=bearer(m.tokens[seat]))))[0] == UNAUTH
        # the new one acts, on either worker; the other seats' credentials are untouched
        act.expected_version = new.version
        done = await b.SubmitAction(act, metadata=bearer(new.token))
        assert done.version > new.version
        other = m.tokens[(seat + 1) % len(m.tokens)]
        assert (await a.GetMatch(get, metadata=bearer(other))).match.version == done.version
        # a retried CreateMatch hands out the current credentials
        again = await create(b, "paulista", api_key=KEY, request_id="table-1")
        assert again.match_id == m.match_id and again.tokens[seat] == new.token
        assert again.tokens[(seat + 1) % len(m.tokens)] == other
        # the record has the step (and replays: GetMatchRecord rebuilds it)
        record = await a.GetMatchRecord(MS.GetMatchRecordRequest(match_id=m.match_id), metadata=bearer(other))
        steps = [s.reissue_credential for s in record.record.steps if s.HasField("reissue_credential")]
        assert [s.seat for s in steps] == [seat]


async def test_streams_and_connections_opened_with_a_reissued_credential_end_unauthenticated(
    make_worker: WorkerFactory,
) -> None:
    async with two_workers(make_worker) as (a, b, base, _ch):
        m = await create(a, "paulista", api_key=KEY)
        stream = b.StreamObservations(
            MS.StreamObservationsRequest(match_id=m.match_id), metadata=bearer(m.tokens[0])
        )
        other = b.StreamObservations(
            MS.StreamObservationsRequest(match_id=m.match_id), metadata=bearer(m.tokens[1])
        )
        await stream.read()
        await other.read()
        conn = b.Connect()
        await conn.write(
            MS.ConnectRequest(
                subscribe=MS.ConnectSubscribe(subscription_id=7, token=m.tokens[0], match_id=m.match_id)
            )
        )
        assert (await conn.read()).HasField("update")
        url = f"{base}/v1/matches/{m.match_id}:streamObservations"
        sse_headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {m.tokens[0]}"}
        async with aiohttp.ClientSession() as http, http.get(url, headers=sse_headers) as resp:
            events = sse_events(resp)
            assert (await anext(events)).event == "update"

            await reissue(a, m.match_id, seat=0)

            async def rest_of_sse() -> list[Any]:
                return [ev async for ev in events if ev.event not in ("heartbeat", "update")]

            sse_rest = await asyncio.wait_for(rest_of_sse(), 10)
        assert [ev.event for ev in sse_rest] == ["rpc_error"]
        assert sse_rest[0].data["code"] == grpc.StatusCode.UNAUTHENTICATED.value[0]

        with pytest.raises(grpc.aio.AioRpcError) as caught:
            while True:
                msg = await asyncio.wait_for(stream.read(), 10)
                assert msg is not grpc.aio.EOF, "the stream ended without an error"
                assert not msg.update.events, "an update reached the revoked credential"
        assert caught.value.code() == UNAUTH

        while True:
            got = await asyncio.wait_for(conn.read(), 10)
            if got.HasField("ended"):
                break
            assert not got.update.message.update.events, "an update reached the revoked credential"
        assert got.ended.subscription_id == 7 and got.ended.status.code == UNAUTH.value[0]
        conn.cancel()

        # the other seat's stream goes on and sees the (token-less) event
        upd = await asyncio.wait_for(other.read(), 10)
        while not upd.update.events:
            upd = await asyncio.wait_for(other.read(), 10)
        assert upd.update.events[-1].WhichOneof("payload") == "credential_reissued"
        assert upd.update.events[-1].credential_reissued.seat == 0
        other.cancel()


async def test_a_retried_reissue_is_idempotent_over_grpc_and_rest(make_worker: WorkerFactory) -> None:
    async with two_workers(make_worker) as (a, b, base, _ch):
        m = await create(a, "paulista", api_key=KEY)
        first = await reissue(a, m.match_id, seat=1, request_id="rotate-1")
        again = await reissue(b, m.match_id, seat=1, request_id="rotate-1")
        assert (again.token, again.version) == (first.token, first.version)
        url = f"{base}/v1/matches/{m.match_id}:reissueCredential"
        async with aiohttp.ClientSession() as http:
            status, body = await call(http, "POST", url, {"seat": 1, "requestId": "rotate-1"}, KEY)
            assert status == 200, body
            assert body["token"] == first.token and int(body["version"]) == first.version
            # the same id for another credential is a reuse, not a retry
            status, body = await call(http, "POST", url, {"spectators": True, "requestId": "rotate-1"}, KEY)
            assert status == 409 and body["details"][0]["reason"] == "REQUEST_ID_REUSED", body
            # a seat's action whose request id happens to be the operator's is told apart
            tokens = [first.token if i == 1 else t for i, t in enumerate(m.tokens)]
            seat, act = await legal_action(a, m.match_id, tokens)
            act.request_id = "reissue:rotate-1"
            assert len(reissue_key("rotate-1")) > limits.FIELD_LIMITS["request_id"].chars
            assert (await a.SubmitAction(act, metadata=bearer(tokens[seat]))).version > first.version
            # a new request id issues a new credential; REST spectators' re-issue
            status, body = await call(http, "POST", url, {"seat": 1, "requestId": "rotate-2"}, KEY)
            assert status == 200 and body["token"] != first.token
            status, spec = await call(http, "POST", url, {"spectators": True}, KEY)
            assert status == 200 and "seat" not in spec, spec
        got = await b.GetMatch(MS.GetMatchRequest(match_id=m.match_id), metadata=bearer(spec["token"]))
        assert not got.observation.hand  # the spectators' view
        get = MS.GetMatchRequest(match_id=m.match_id)
        assert (await refusal(b.GetMatch(get, metadata=bearer(m.spectator))))[0] == UNAUTH
        assert (await refusal(b.GetMatch(get, metadata=bearer(first.token))))[0] == UNAUTH


async def test_only_the_owner_reissues_and_the_request_is_checked(make_worker: WorkerFactory) -> None:
    async with two_workers(make_worker) as (a, b, _base, _ch):
        m = await create(a, "paulista", api_key=KEY)
        code = refusal
        assert (await code(reissue(b, m.match_id, OTHER, seat=0)))[0] == grpc.StatusCode.NOT_FOUND
        assert (await code(reissue(b, m.match_id, m.tokens[0], seat=0)))[0] == UNAUTH
        assert (await code(reissue(b, m.match_id, seat=5)))[0] == grpc.StatusCode.INVALID_ARGUMENT
        assert (await code(reissue(b, m.match_id)))[0] == grpc.StatusCode.INVALID_ARGUMENT
        both = reissue(b, m.match_id, seat=0, spectators=True)
        assert (await code(both))[0] == grpc.StatusCode.INVALID_ARGUMENT
        assert (await code(reissue(b, "m-none", seat=0)))[0] == grpc.StatusCode.NOT_FOUND
        await a.CancelMatch(MS.CancelMatchRequest(match_id=m.match_id), metadata=bearer(KEY))
        assert (await code(reissue(b, m.match_id, seat=0)))[0] == grpc.StatusCode.FAILED_PRECONDITION
        # nothing was re-issued: the first credentials still read the match
        got = await b.GetMatch(MS.GetMatchRequest(match_id=m.match_id), metadata=bearer(m.tokens[0]))
        assert got.match.state == match_pb2.MATCH_STATE_CANCELLED


async def test_a_reissue_is_an_operator_event(make_worker: WorkerFactory) -> None:
    from truco_contract.pb import operator_service_pb2 as OS
    from truco_contract.pb import operator_service_pb2_grpc

    async with two_workers(make_worker) as (a, _, _, chb):
        m = await create(a, "paulista", api_key=KEY)
        ops = operator_service_pb2_grpc.OperatorServiceStub(chb)
        stream = ops.StreamOperatorEvents(OS.StreamOperatorEventsRequest(), metadata=bearer(KEY))
        await asyncio.wait_for(stream.wait_for_connection(), 10)
        await asyncio.sleep(0.2)  # the stream is following (it shows only events from now on)
        done = await reissue(a, m.match_id, seat=0)
        seen: list[str] = []
        while f"{m.match_id}:{done.version}" not in seen:
            msg = await asyncio.wait_for(stream.read(), 10)
            assert msg is not grpc.aio.EOF
            if msg.HasField("event"):
                seen.append(msg.event.id)
                last = msg.event
        stream.cancel()
        assert last.type == "match.credential_reissued"
        assert last.event.credential_reissued.seat == 0


async def test_the_sdk_reissues_with_its_own_request_id(make_worker: WorkerFactory) -> None:
    from truco_client import AsyncTrucoClient, Unauthenticated

    async with make_worker(api_keys=KEYS) as w, AsyncTrucoClient(w.grpc_address, api_key=KEY) as ops:
        m = await ops.create_match("paulista", credential_ttl=3600)
        assert m.match.lifecycle.credential_ttl == 3_600_000
        new = await ops.reissue_credential(m.match_id, 1)
        assert new.seat == 1 and new.expires_at is not None and new.expires_at > time.time() + 3000
        spectators = await ops.reissue_credential(m.match_id, None, request_id="spec-1")
        again = await ops.reissue_credential(m.match_id, None, request_id="spec-1")
        assert spectators.seat is None and again.token == spectators.token
        seen = await ops.with_token(new.token).get_match(m.match_id)
        assert seen.observation.seat == 1
        with pytest.raises(Unauthenticated):
            await ops.with_token(m.seat_tokens[1]).get_match(m.match_id)


# ------------------------------------------------------------------------- expiry
def ttl_settings(seconds: int) -> match_pb2.MatchSettings:
    s = match_pb2.MatchSettings()
    s.credential_ttl.FromSeconds(seconds)
    return s


async def test_credentials_expire_after_the_match_credential_ttl() -> None:
    clock = FakeClock()
    settings = Settings(api_keys=KEYS, heartbeat_interval_seconds=0.1)
    svc = build_services(settings, asyncio.Event(), open_store(None), clock=clock)
    api: Any = apis(svc, Authenticator(settings))[0][1]
    op = Credentials(api_key=KEY)
    created = await api.CreateMatch(
        op, MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset="paulista"), settings=ttl_settings(60))
    )
    assert created.match.settings.credential_ttl.seconds == 60
    match_id = created.match.match_id
    seat0 = Credentials(bearer=created.seat_credentials[0].token)
    get = MS.GetMatchRequest(match_id=match_id)
    stream = api.StreamObservations(seat0, MS.StreamObservationsRequest(match_id=match_id))
    await anext(stream)
    clock.advance(59)
    await api.GetMatch(seat0, get)
    clock.advance(1)
    with pytest.raises(ServiceError) as caught:
        await api.GetMatch(seat0, get)
    # expired: a genuine credential is told so (only its holder can get this answer)
    expired = ("UNAUTHENTICATED", "EXPIRED_CREDENTIAL", ExpiredCredential.MESSAGE)
    assert (caught.value.code.name, caught.value.reason, caught.value.message) == expired
    # a made-up credential of the same seat is still only invalid, not expired
    forged = created.seat_credentials[0].token[:-40] + "0" * 40
    with pytest.raises(ServiceError) as made_up:
        await api.GetMatch(Credentials(bearer=forged), get)
    assert (made_up.value.reason, made_up.value.message) == ("INVALID_CREDENTIAL", CredentialNotValid.MESSAGE)
    # the open stream ends at its next message (a heartbeat here), saying why
    with pytest.raises(ServiceError) as ended:
        while True:
            upd = await asyncio.wait_for(anext(stream), 5)
            assert upd.heartbeat.version, "an update reached the expired credential"
    assert (ended.value.code.name, ended.value.reason) == ("UNAUTHENTICATED", "EXPIRED_CREDENTIAL")
    # a re-issued credential lives credential_ttl from its issue
    new = await api.ReissueCredential(op, MS.ReissueCredentialRequest(match_id=match_id, seat=0))
    assert new.expire_time.ToMilliseconds() == round((clock.now + 60) * 1000)
    fresh = Credentials(bearer=new.token)
    await api.GetMatch(fresh, get)
    with pytest.raises(ServiceError) as seat1:  # seat 1's first credential expired with seat 0's
        await api.GetMatch(Credentials(bearer=created.seat_credentials[1].token), get)
    assert seat1.value.reason == "EXPIRED_CREDENTIAL"
    with pytest.raises(ServiceError) as replaced:  # a re-issued one is invalid, expired or not
        await api.GetMatch(seat0, get)
    assert (replaced.value.reason, replaced.value.message) == (
        "INVALID_CREDENTIAL",
        CredentialNotValid.MESSAGE,
    )
    clock.advance(60)
    with pytest.raises(ServiceError) as later:
        await api.GetMatch(fresh, get)
    assert later.value.reason == "EXPIRED_CREDENTIAL"


async def test_credential_ttl_is_validated_and_shown_over_rest(make_worker: WorkerFactory) -> None:
    async with make_worker(api_keys=KEYS) as w, aiohttp.ClientSession() as http:
        base = f"http://127.0.0.1:{w.http_port}"
        body: dict[str, Any] = {"rules": {"preset": "paulista"}, "settings": {"credentialTtl": "0.5s"}}
        status, err = await call(http, "POST", f"{base}/v1/matches", body, KEY)
        assert status == 400 and err["details"][1]["fieldViolations"][0]["field"] == "settings.credential_ttl"
        body["settings"]["credentialTtl"] = "3600s"
        status, created = await call(http, "POST", f"{base}/v1/matches", body, KEY)
        assert status == 200 and created["match"]["settings"]["credentialTtl"] == "3600s"
        url = f"{base}/v1/matches/{created['match']['matchId']}:reissueCredential"
        status, new = await call(http, "POST", url, {"seat": 0}, KEY)
        assert status == 200 and "expireTime" in new


# ---------------------------------------------------------------- operator keys
def write_keys(path: Path, text: str) -> None:
    """Replace the file as a Secret volume does (a new file renamed over the old one)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def operator_of(auth: Authenticator, key: str) -> str | None:
    try:
        return auth.operator(Credentials(api_key=key)).name
    except ServiceError:
        return None


def reload_errors() -> float:
    return REGISTRY.get_sample_value("truco_api_key_reloads_total", {"result": "error"}) or 0.0


def test_the_keys_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    write_keys(path, "acme=old-secret\n")
    clock = FakeClock()
    settings = Settings(api_keys_file=str(path), api_keys_poll_seconds=5)
    auth = Authenticator(settings, KeyRing(settings, clock=clock))
    assert not auth.open
    assert operator_of(auth, "old-secret") == "acme"

    write_keys(path, "# rotation: old and new overlap\nacme=old-secret\nacme=new-secret\n")
    assert operator_of(auth, "new-secret") is None  # not looked at yet (the poll interval)
    clock.advance(5)
    assert operator_of(auth, "new-secret") == "acme"
    assert operator_of(auth, "old-secret") == "acme"

    write_keys(path, "acme=new-secret")
    clock.advance(5)
    assert operator_of(auth, "old-secret") is None
    assert operator_of(auth, "new-secret") == "acme"

    errors = reload_errors()
    write_keys(path, "acme=, broken")  # an invalid file: the last good keys stay
    clock.advance(5)
    assert operator_of(auth, "new-secret") == "acme"
    path.unlink()  # a missing file too
    clock.advance(5)
    assert operator_of(auth, "new-secret") == "acme"
    assert reload_errors() == errors + 2

    write_keys(path, "acme=third-secret")
    auth.keys.request_reload()  # SIGHUP: at once, without waiting for the poll
    assert operator_of(auth, "third-secret") == "acme"
    assert operator_of(auth, "new-secret") is None


def test_the_keys_file_is_checked_at_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="TRUCO_API_KEYS_FILE"):
        KeyRing(Settings(api_keys_file=str(tmp_path / "missing")))
    (tmp_path / "bad").write_text("acme=")
    with pytest.raises(ConfigError, match="empty secret"):
        KeyRing(Settings(api_keys_file=str(tmp_path / "bad")))
    (tmp_path / "empty").write_text("")
    empty = Settings(api_keys_file=str(tmp_path / "empty"))
    assert not Authenticator(empty).open  # a keys file, even empty, is never open mode


async def test_a_running_worker_takes_rotated_keys_over_grpc_and_rest(
    make_worker: WorkerFactory, tmp_path: Path
) -> None:
    path = tmp_path / "keys"
    write_keys(path, "acme=old-secret")
    async with (
        make_worker(api_keys_file=str(path), api_keys_poll_seconds=0.1) as w,
        grpc.aio.insecure_channel(w.grpc_address) as ch,
        aiohttp.ClientSession() as http,
    ):
        stub = Stub(ch)
        base = f"http://127.0.0.1:{w.http_port}"

        async def works(key: str) -> tuple[bool, bool]:
            req = MS.ListMatchesRequest()
            try:
                await stub.ListMatches(req, metadata=bearer(key))
                over_grpc = True
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == UNAUTH
                over_grpc = False
            status, _ = await call(http, "GET", f"{base}/v1/matches", token=key)
            assert status in (200, 401)
            return over_grpc, status == 200

        m = await create(stub, "paulista", api_key="old-secret")
        assert await works("old-secret") == (True, True)
        assert await works("new-secret") == (False, False)
        write_keys(path, "acme=old-secret,acme=new-secret")
        await asyncio.sleep(0.3)
        assert await works("new-secret") == (True, True)
        write_keys(path, "acme=new-secret")
        await asyncio.sleep(0.3)
        assert await works("old-secret") == (False, False)
        # the same operator: its matches are still its own with the new key
        got = await stub.GetMatch(MS.GetMatchRequest(match_id=m.match_id), metadata=bearer("new-secret"))
        assert got.match.match_id == m.match_id


def test_truco_serve_workers_reload_the_keys_file_on_sighup(tmp_path: Path, clean_redis_url: str) -> None:
    """``truco serve --workers 2`` with a poll interval far longer than the test: SIGHUP to the
    parent reaches every worker, each logs the fingerprints it loaded (never the secrets)."""
    path = tmp_path / "keys"
    write_keys(path, "acme=old-secret")
    args = (
        "--redis", clean_redis_url, "--workers", "2",
        "--api-keys-file", str(path), "--api-keys-poll", "3600",
    )  # fmt: skip
    with serve_apart(tmp_path, *args) as served:  # two workers start on a busy machine: 60 s
        log_path = served.stdout
        write_keys(path, "acme=new-secret")
        served.proc.send_signal(signal.SIGHUP)
        fingerprint = ApiKey("acme", "new-secret").fingerprint

        def reloads() -> list[dict[str, Any]]:
            lines = [json.loads(x) for x in log_path.read_text().splitlines() if x.startswith("{")]
            return [x for x in lines if x.get("event") == "api keys loaded" and x.get("when") == "reload"]

        signalled = time.monotonic()
        while len(reloads()) < 2:
            assert time.monotonic() < signalled + 20, log_path.read_text()
            time.sleep(0.05)
        assert all(x["keys"] == [f"acme:{fingerprint}"] for x in reloads())
        assert "new-secret" not in log_path.read_text() and "old-secret" not in log_path.read_text()


# ------------------------------------------------------------------------- kinds
def test_the_kind_of_a_credential_is_told_from_the_call_alone() -> None:
    bot = "tb1.bot_0123456789abcdef.s3cret"
    odd_key = "tb1.an-operator-secret-that-looks-like-a-bot"  # a configured key always wins
    keyed = Authenticator(Settings(api_keys=(*KEYS, ApiKey("odd", odd_key))))

    def reason(call: Callable[[], object]) -> str:
        with pytest.raises(ServiceError) as caught:
            call()
        return caught.value.reason

    assert keyed.operator(Credentials(api_key=odd_key)).name == "odd"
    assert keyed.viewer(Credentials(api_key=odd_key), "m1") == keyed.operator(Credentials(api_key=odd_key))
    assert reason(lambda: keyed.operator(Credentials(api_key=bot))) == "WRONG_CREDENTIAL_KIND"
    assert reason(lambda: keyed.viewer(Credentials(api_key=bot), "m1")) == "WRONG_CREDENTIAL_KIND"
    assert reason(lambda: keyed.seat(Credentials(api_key=bot), "m1")) == "WRONG_CREDENTIAL_KIND"
    assert reason(lambda: keyed.seat(Credentials(api_key=KEY), "m1")) == "WRONG_CREDENTIAL_KIND"
    seat = f"tc1.m1.0.{'0' * 40}"
    assert reason(lambda: keyed.operator(Credentials(bearer=seat))) == "WRONG_CREDENTIAL_KIND"
    assert reason(lambda: keyed.viewer(Credentials(api_key="nope"), "m1")) == "INVALID_CREDENTIAL"
    assert reason(lambda: keyed.viewer(Credentials(bearer=seat), "m2")) == "INVALID_CREDENTIAL"
    opened = Authenticator(Settings())
    assert reason(lambda: opened.viewer(Credentials(api_key=bot), "m1")) == "WRONG_CREDENTIAL_KIND"
    assert reason(lambda: opened.viewer(Credentials(api_key="nope"), "m1")) == "MALFORMED_CREDENTIAL"
    assert reason(lambda: opened.viewer(Credentials(), "m1")) == "MISSING_CREDENTIAL"


def test_a_credential_whose_signature_is_not_lower_case_hex_is_malformed() -> None:
    mac = issue("m1", "ab" * 32, 0).rsplit(".", 1)[1]
    assert parts(f"tc1.m1.0.{mac}") == ("m1", "0")
    for bad in (mac.upper(), mac[:20] + "g" + mac[21:], mac[:39] + " ", "-" + mac[1:], mac[:39]):
        with pytest.raises(MalformedCredential, match="40 lower-case hex digits"):
            parts(f"tc1.m1.0.{bad}")

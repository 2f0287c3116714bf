"""Coverage-guided fuzz targets (atheris) for the parsers of untrusted text.

Run one with ``python -m tests.fuzz.targets NAME [libFuzzer flags] [corpus dirs]`` from the
repository root (``scripts/fuzz.py`` runs them all for a time; ``tests/fuzz`` runs each for a
fixed number of inputs). Targets (:data:`TARGETS`):

* ``records`` -- what ``truco verify`` and ``truco replay`` read: a match's export
  (``truco-match-record/1``, :func:`truco_contract.record_file.record_from_json`, then
  :func:`truco_contract.record_file.verify_json`) and the engine's own record (``truco-record/1``,
  :mod:`truco_engine.record`), both through the CLI's :func:`truco_cli.engine_commands.replay_any`.
  Oracle: ``replay_any`` raises only :class:`truco_engine.TrucoError` (the record error types),
  ``verify_json`` never raises (a fault is a report), and a record that verifies also replays,
  to the state the verifier ended with.
* ``connect`` -- one player connection's conversation as the WebSocket face reads it
  (:mod:`tests.fuzz.connect`, its oracle there).
* ``rest`` -- one REST call, in process and without sockets: the route, path variables, query,
  body (JSON or raw text), ``Authorization``/``X-Api-Key`` and ``Last-Event-ID``, decoded as the
  REST face does (:func:`truco_server.transports.rest.routes.decode_request`, the limits of
  :mod:`truco_server.api.limits`, the credentials of :mod:`truco_server.api.auth`), then served
  by the API layer both transports call, on an in-memory store holding a live match. Oracle:
  only :class:`truco_server.core.errors.ServiceError` comes out, never one whose status is INTERNAL
  or UNKNOWN, and a refused call leaves the store as it was.

Seeds: ``tests/fuzz/corpus/<target>/`` (real records and request bodies, written by
``python -m tests.fuzz.targets --write-corpus``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import json
import random
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:  # the project is imported inside the targets, after atheris instruments it
    import truco_engine as te

CORPUS = Path(__file__).parent / "corpus"
API_KEY = "fuzz-operator-key"


class Finding(AssertionError):
    """An input the oracle refuses (atheris reports it with the input that caused it)."""


# ================================================================================ records
def _engine_record(rng: random.Random, preset: str, **overrides: Any) -> str:
    """A whole engine record (``truco-record/1``) of random legal play."""
    import truco_engine as te

    rules = te.get_rules(preset, **overrides)
    match = te.Match(rules, first_dealer=rng.randrange(rules.players))
    for _ in range(2000):
        if te.is_over(match.state):
            break
        if te.needs_deal(match.state):
            deck = list(te.DECKS[rules.deck])
            rng.shuffle(deck)
            match.deal(deck, salt=f"{rng.getrandbits(32):08x}")
            continue
        seat = te.to_act(match.state)[0]
        legal = te.legal_actions(match.state, seat)
        match.act(seat, rng.choice([a for a in legal if a.kind != "fold"] or legal))
    return match.record.to_json()


def record_seeds() -> Iterator[tuple[str, str]]:
    """(name, text) of real records of both formats: short matches of several presets, with
    join windows, client seeds and the operator's deck orders."""
    import truco_engine as te
    from tests.records.local import play_record
    from truco_contract import record_file
    from truco_match.events import DealSource

    rng = random.Random(20)
    for preset, kw, joins in (
        ("paulista-2p", {"target_points": 3}, [b"j" * 16, b""]),
        ("argentine-2p", {"target_points": 5}, None),
        ("mineiro-4p", {"target_points": 2}, None),
        ("uruguayan-2p", {"target_points": 4}, [b"", b"k" * 24]),
    ):
        rules = te.get_rules(preset, **kw)
        rec = play_record(rules, rng, join_seeds=joins, creator_seed=b"c" * 8)
        yield f"match-{preset}.json", record_file.record_to_json(rec)
    rules = te.get_rules("paulista-2p", target_points=2)
    deck = list(te.DECKS[rules.deck])
    rng.shuffle(deck)
    rec = play_record(rules, rng, source=DealSource.OPERATOR_DECKS, deck_orders=[deck])
    yield "match-operator-deck.json", record_file.record_to_json(rec)
    for preset, kw in (("paulista-2p", {"target_points": 3}), ("argentine-2p", {"target_points": 4})):
        yield f"engine-{preset}.json", _engine_record(rng, preset, **kw) + "\n"


def records_target(data: bytes) -> None:
    import truco_engine as te
    from truco_cli.engine_commands import replay_any
    from truco_contract.record_file import verify_json

    text = data.decode("utf-8", "surrogatepass") if _utf8(data) else None
    replayed: te.MatchState | None = None
    if text is not None:
        try:
            replayed = replay_any(text)
        except te.TrucoError:
            pass
        except Exception as exc:
            raise Finding(f"replay_any raised {type(exc).__name__}: {exc}"[:400]) from exc
    try:
        report = verify_json(data)
    except Exception as exc:
        raise Finding(f"verify_json raised {type(exc).__name__}: {exc}"[:400]) from exc
    if report.ok:
        if replayed is None:
            raise Finding("a record that verifies does not replay")
        assert report.final is not None
        if te.state_to_json(report.final) != te.state_to_json(replayed):
            raise Finding("a record that verifies replays to another state than the verifier's")


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# =================================================================================== rest
@dataclass
class RestEnv:
    """The API layer on an in-memory store with one live match (seats joined, a few moves)."""

    loop: asyncio.AbstractEventLoop
    services: Any
    apis: dict[str, Any]
    routes: dict[str, Any]
    match_api: Any
    mem: Any = None
    """The in-memory store, whose own data a refused call must leave alone."""
    match_id: str = ""
    tokens: dict[str, str] = field(default_factory=dict)
    ticket: dict[str, str] = field(default_factory=dict)
    """The ``connect`` target's waiting ticket (``$pool``, ``$ticketid``, ``$tickettoken``):
    made once per environment, it outlives the live matches."""
    fresh: str = ""
    """The fingerprint of the live match as created (each input meets the match in that state)."""
    calls: int = 0
    accepted: int = 0
    """Actions the ``connect`` target's conversations got a result for."""
    timeouts: int = 0
    refused: dict[str, int] = field(default_factory=dict)
    last_refusal: str = ""

    def match_fingerprint(self, *, presence: bool = True) -> str:
        """A digest of everything the store holds of the live match (its seats' presence
        left out with ``presence=False``)."""
        m = self.mem.matches._matches.get(self.match_id)
        if m is None:
            return "gone"
        h = hashlib.sha256(m.meta + m.state + str(m.version).encode())
        seen = sorted(m.presence.items()) if presence else None
        h.update(repr((len(m.events), sorted(m.requests), len(m.record), seen)).encode())
        h.update(repr((len(m.outbox), m.expires_at, m.relay is not None)).encode())
        return h.hexdigest()

    def refusal(self, exc: Any, what: str) -> None:
        """Count a typed refusal (``exc``, a ``ServiceError``) of ``what``; a finding when its
        status is UNKNOWN or INTERNAL or it carries no reason."""
        from truco_server.api.status import to_status

        status = to_status(exc)
        if status.code in (2, 13):  # UNKNOWN, INTERNAL
            raise Finding(f"{what} answered code {status.code}: {status.message}"[:400]) from exc
        if not exc.reason:
            raise Finding(f"{what}: an error without a reason: {exc}") from exc
        self.refused[exc.reason] = self.refused.get(exc.reason, 0) + 1
        self.last_refusal = f"{exc.reason}: {exc}"

    def fingerprint(self) -> tuple[Any, ...]:
        """What a refused call must leave alone: the live match in full, and how many matches,
        listings, queued items, operators, operator events and documents the store holds."""
        matches, operators = self.mem.matches, self.mem.operators._operators
        return (
            self.match_fingerprint(),
            len(matches._matches),
            sum(len(v) for v in matches._owner_index.values()),
            sum(len(v) for v in self.mem.queues._queues.values()),
            len(operators),
            sum(len(o.events) + len(o.webhooks) for o in operators.values()),
            len(self.mem.documents._docs),
        )


def _offline_destinations() -> type:
    from truco_server.core import errors as E
    from truco_server.services.webhooks import Destinations

    class OfflineDestinations(Destinations):
        """The worker's webhook destination check without the name lookup: the fuzzer never
        leaves the process (a host name is taken as one that does not resolve; an IP literal
        is checked as the worker checks it)."""

        async def check(self, url: str) -> None:
            problem = self.problem(url)
            host = (urlsplit(url).hostname or "").rstrip(".") if problem is None else ""
            try:
                ipaddress.ip_address(host)
            except ValueError:
                if problem is None:
                    problem = "the host does not resolve (no name lookups in the fuzzer)"
            if problem is not None:
                raise E.InvalidArgument(
                    f"webhook url refused: {problem}",
                    reason=E.Reason.DESTINATION_NOT_ALLOWED,
                    field_violations=[E.FieldViolation("url", problem)],
                )
            await super().check(url)  # getaddrinfo of an IP literal does no lookup

    return OfflineDestinations


def _rest_env() -> RestEnv:
    from truco_server.api.auth import Authenticator
    from truco_server.api.matches import MatchApi
    from truco_server.app.wiring import apis, build_services
    from truco_server.core.config import ApiKey, Settings
    from truco_server.core.logging import configure_logging
    from truco_server.stores import open_store
    from truco_server.transports.rest.routes import routes_of

    configure_logging("critical", "stderr")
    OfflineDestinations = _offline_destinations()
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    settings = Settings(api_keys=(ApiKey(name="ops", secret=API_KEY),), heartbeat_interval_seconds=0.05)
    store = open_store(None)
    svc = build_services(settings, asyncio.Event(), store)
    offline = OfflineDestinations("")
    svc.operators.destinations = svc.deliverer.destinations = offline
    routes: dict[str, Any] = {}
    by_method: dict[str, Any] = {}
    api: MatchApi | None = None
    for service, served in apis(svc, Authenticator(settings)):
        if service.name == "LeagueService":
            continue
        for r in routes_of(service):
            routes[r.method_name] = r
            by_method[r.method_name] = served
        api = served if isinstance(served, MatchApi) else api
    assert api is not None
    return RestEnv(loop, svc, by_method, routes, api, store)


async def _new_match(env: RestEnv) -> None:
    """A new live match (the same seed, so the same deal and state each time)."""
    from truco_contract.pb import match_pb2
    from truco_contract.pb import match_service_pb2 as MS
    from truco_server.core.caller import Credentials

    created = await env.match_api.CreateMatch(
        Credentials(api_key=API_KEY),
        MS.CreateMatchRequest(rules=match_pb2.RuleSet(preset="argentine"), players=2, seed=b"f" * 32),
    )
    await env.services.relay.done()  # its operator events are relayed before any input
    env.match_id = created.match.match_id
    env.tokens = {f"$seat{c.seat}": c.token for c in created.seat_credentials}
    env.tokens["$spectator"] = created.spectator_token
    env.tokens["$key"] = API_KEY


_ENV: RestEnv | None = None
RESET_EVERY = 500
"""Calls before the environment starts again (a bounded store, matches not played out)."""


def rest_env() -> RestEnv:
    global _ENV
    if _ENV is None or _ENV.calls >= RESET_EVERY:
        if _ENV is not None:
            _ENV.loop.close()
        _ENV = _rest_env()
    return _ENV


def _subst(env: RestEnv, value: Any) -> Any:
    """``$match``, ``$seat0``... in the envelope's strings become the live match's."""
    if isinstance(value, str):
        if "$" not in value:
            return value
        value = value.replace("$match", env.match_id)
        for k, v in env.tokens.items():
            value = value.replace(k, v)
        return value
    if isinstance(value, list):
        return [_subst(env, v) for v in value]
    if isinstance(value, dict):
        return {k: _subst(env, v) for k, v in value.items()}
    return value


def _decode_envelope(data: bytes) -> dict[str, Any]:
    """The call an input describes: a JSON envelope, or else raw text as a CreateMatch body."""
    try:
        env = json.loads(data)
    except (ValueError, RecursionError):
        env = None
    if not isinstance(env, dict) or not isinstance(env.get("route"), str):
        return {"route": "CreateMatch", "headers": {"x-api-key": "$key"}, "raw": data}
    return env


def _pairs(value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        value = list(value.items())
    if not isinstance(value, list):
        return []
    return [(str(p[0]), str(p[1])) for p in value if isinstance(p, list | tuple) and len(p) == 2]


def rest_target(data: bytes) -> None:
    from truco_server.api import limits
    from truco_server.core import errors as E
    from truco_server.core.caller import Credentials
    from truco_server.transports.rest.routes import decode_request, last_event_version

    env = rest_env()
    call = _decode_envelope(data)
    route = env.routes.get(call["route"])
    if route is None:
        return
    env.calls += 1
    if env.fresh != env.match_fingerprint():  # the last call changed it: the next one gets a new one
        env.loop.run_until_complete(_new_match(env))
        env.fresh = env.match_fingerprint()
    call = _subst(env, call)
    headers = {k.lower(): v for k, v in _pairs(call.get("headers"))}
    raw = call.get("raw")
    if raw is None:
        body = call.get("body")
        raw = b"" if body is None else (body if isinstance(body, str) else json.dumps(body))
        raw = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    path_params = {k: v for k, v in _pairs(call.get("path"))}
    for name in route.path_fields:
        path_params.setdefault(name.replace(".", "__"), env.match_id)
    # what earlier calls left to relay (RELAY_GATHER_SECONDS after their commits) is done first
    env.loop.run_until_complete(env.services.relay.done())
    before = env.fingerprint()
    try:
        creds = Credentials.from_pairs(list(headers.items()))
        message: Any = decode_request(route, path_params, _pairs(call.get("query")), raw)
        limits.require(message)
        if (
            route.server_streaming
            and "last-event-id" in headers
            and "from_version" in route.input.fields_by_name
        ):
            version = last_event_version(headers["last-event-id"])
            if version is not None and not message.HasField("from_version"):
                message.from_version = version
        method = getattr(env.apis[route.method_name], route.method_name)
        env.loop.run_until_complete(_serve(env, route, method, creds, message))
    except E.ServiceError as exc:
        env.refusal(exc, route.method_name)
        if env.fingerprint() != before:
            raise Finding(f"{route.method_name} was refused ({exc.reason}) but changed the store") from exc
    except Finding:
        raise
    except Exception as exc:
        raise Finding(f"{route.method_name} raised {type(exc).__name__}: {exc}"[:400]) from exc


async def _serve(env: RestEnv, route: Any, method: Callable[..., Any], creds: Any, message: Any) -> None:
    if not route.server_streaming:
        response = await method(creds, message)
        response.SerializeToString()
        return
    stream = method(creds, message)
    try:
        first = await asyncio.wait_for(anext(stream), 2.0)
        first.SerializeToString()
    except StopAsyncIteration:
        pass
    except TimeoutError:
        env.timeouts += 1
    finally:
        with contextlib.suppress(Exception):
            await stream.aclose()


# ================================================================================ running
from tests.fuzz.connect import connect_seeds, connect_target  # noqa: E402
from tests.fuzz.rest_seeds import rest_seeds  # noqa: E402  (it uses the rest target's)

TARGETS: dict[str, Callable[[bytes], None]] = {
    "records": records_target,
    "rest": rest_target,
    "connect": connect_target,
}
SEEDS: dict[str, Callable[[], Iterator[tuple[str, str]]]] = {
    "records": record_seeds,
    "rest": rest_seeds,
    "connect": connect_seeds,
}
MAX_LEN = {"records": 16384, "rest": 4096, "connect": 4096}
BUILD_ENV = "TRUCO_FUZZ_BUILD"
"""``source`` (the default): the project's modules run from their source even where a compiled
build sits beside them, so that atheris sees (and is guided by) every branch of the move path;
``as-built``: the modules this checkout imports, compiled ones too (no coverage from those)."""


def write_corpus() -> None:
    """Write every target's seeds under :data:`CORPUS` (committed)."""
    for name, seeds in SEEDS.items():
        folder = CORPUS / name
        folder.mkdir(parents=True, exist_ok=True)
        for file, text in seeds():
            (folder / file).write_text(text, encoding="utf-8")
            print(f"{folder / file}: {len(text)} bytes")


def main(argv: list[str]) -> None:
    if argv[1:2] == ["--write-corpus"]:
        write_corpus()
        return
    if len(argv) < 2 or argv[1] not in TARGETS:
        sys.exit(
            f"usage: python -m tests.fuzz.targets {{{','.join(TARGETS)}}} [libFuzzer flags] [corpus dirs]"
        )
    import logging
    import os

    import atheris  # type: ignore[import-untyped]

    from truco_server.core import build

    build_choice = os.environ.get(BUILD_ENV, "source")
    if build_choice not in ("source", "as-built"):
        sys.exit(f"{BUILD_ENV}={build_choice!r}: use source or as-built")
    if build_choice == "source":
        build.run_source()

    from tests.fuzz.mutator import mutate

    logging.disable(logging.CRITICAL)
    name = argv[1]
    target = TARGETS[name]
    flags = argv[2:]
    if not any(f.startswith("-max_len=") for f in flags):
        flags.append(f"-max_len={MAX_LEN[name]}")
    # only what is imported inside this block is instrumented (gives the fuzzer coverage):
    # every module a target reaches, the server's too (the targets import it lazily)
    packages = ["truco_engine", "truco_match", "truco_contract", "truco_server", "truco_cli"]
    with atheris.instrument_imports(include=packages):
        import truco_cli.engine_commands  # noqa: F401
        import truco_engine.record  # noqa: F401
        import truco_match.verify  # noqa: F401
        import truco_server.app.wiring
        import truco_server.stores
        import truco_server.transports.rest.routes
        import truco_server.transports.websocket  # noqa: F401
    atheris.Setup(
        [argv[0], *flags],
        target,
        custom_mutator=lambda data, max_size, seed: mutate(data, max_size, seed, atheris.Mutate),
    )
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)

"""Worker configuration: one frozen `Settings`, from flags, then environment, then defaults.

Every option is declared once in `OPTIONS` (flag, environment variable, type, default,
help); the argparse flags, the environment lookup and the table in `docs/operations.md`
(`settings_markdown_table()`) all come from that declaration.

Precedence: a flag given on the command line wins over the environment variable, which wins
over the default. Secrets (API keys) come from the environment only, never from flags (flags
show up in `ps`).
"""

from __future__ import annotations

import argparse
import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from truco_server.core.config_values import (
    LOG_LEVELS,
    ApiKey,
    ConfigError,
    _bot_think_ms,
    _flag,
    _gc_thresholds,
    _log_level,
    _non_negative_float,
    _non_negative_int,
    _path,
    _port,
    _positive_float,
    _positive_int,
    _redis_url,
    _retry_schedule,
    find_api_key,
    parse_api_keys,
    parse_cors_origins,
    read_api_keys_file,
    redact_url,
)

__all__ = [
    "LOG_LEVELS",
    "ApiKey",
    "ConfigError",
    "Option",
    "Settings",
    "add_arguments",
    "find_api_key",
    "load_settings",
    "parse_api_keys",
    "parse_cors_origins",
    "parse_settings",
    "read_api_keys_file",
    "redact_url",
    "settings_markdown_table",
]


@dataclass(frozen=True)
class Settings:
    """Everything a worker needs to know. Build it with `load_settings()`."""

    redis_url: str | None = field(default=None, repr=False)
    """Redis URL: one server (`redis://`, `rediss://`, `unix://`), a Redis Cluster
    (`redis+cluster://HOST:PORT[,HOST:PORT...]`) or a Sentinel group
    (`redis+sentinel://HOST:PORT[,HOST:PORT...]/MASTER_NAME`); `rediss+...` for TLS. Forms
    and options: docs/operations.md, "Redis URLs". Unset: the in-memory store (one process,
    nothing survives a restart)."""
    host: str = "127.0.0.1"
    """Interface the gRPC, REST and metrics listeners bind. Loopback by default so a
    development run is never exposed; containers set `0.0.0.0`."""
    grpc_port: int = 50051
    """gRPC port; 0 picks a free port (tests)."""
    http_port: int = 8080
    """REST/JSON + SSE port (same worker, same MatchService); 0 picks a free port (tests)."""
    metrics_port: int = 9100
    """Prometheus `/metrics` port; 0 disables the endpoint."""
    api_keys: tuple[ApiKey, ...] = ()
    """Operator API keys (create, list, cancel matches): comma-separated `name=secret`
    entries (a bare `secret` is named `key-<sha256 prefix>`); one name may have several keys
    (old and new during a rotation). Without keys (and without `TRUCO_API_KEYS_FILE`) the
    worker runs open: any operator call (with or without a key) acts as the operator `public`,
    while a match is still read and played only with its seat and spectator tokens, never with
    a key (for development; set keys in production)."""
    api_keys_file: str | None = None
    """A file of operator API keys in the format of `TRUCO_API_KEYS` (commas or one entry per
    line; `#` starts a comment), accepted in addition to them and re-read when it changes, so
    keys rotate without a restart (docs/operations.md, "Rotating operator keys"). Set, the
    worker is never open, even while the file holds no key."""
    api_keys_poll_seconds: float = 5.0
    """How often a worker looks whether `TRUCO_API_KEYS_FILE` changed (and SIGHUP re-reads
    it at once)."""
    log_level: str = "info"
    """Minimum log level."""
    shutdown_grace_seconds: float = 10.0
    """On SIGTERM: time in-flight unary RPCs get to finish before they are cancelled."""
    shutdown_drain_seconds: float = 0.0
    """On SIGTERM: time between reporting NOT_SERVING and refusing new RPCs, so load
    balancers and Kubernetes stop routing here first."""
    heartbeat_interval_seconds: float = 5.0
    """A stream that has had nothing to send for this long sends a heartbeat."""
    max_concurrent_rpcs: int = 4096
    """Concurrent RPCs (open streams included) before new ones get RESOURCE_EXHAUSTED;
    0: unlimited."""
    subscriber_queue_size: int = 256
    """Updates buffered per stream subscriber; a subscriber that falls further behind
    re-reads the events it missed from the store."""
    event_log_max_len: int = 64
    """Events kept per match log (the last 25-30 actions); a resume from further back has
    its events rebuilt from the match record. Redis memory per live match grows by about
    75 bytes per event kept (docs/storage.md)."""
    finished_match_ttl_seconds: int = 86400
    """How long a finished or cancelled match stays readable."""
    max_connection_age_seconds: float = 300.0
    """Connections are closed (GOAWAY) after this long so long-lived streams rebalance
    across workers; clients reconnect and resume. 0: never."""
    idle_timeout_seconds: int = 86400
    """An active match without a turn clock in which nothing happens this long is aborted
    (a match's own `settings.idle_timeout` wins); 0: never."""
    scheduler_tick_seconds: float = 0.25
    """How often the worker claims the matches that are due (clock expiries, join windows,
    idle timeouts); deadlines are met within about this much."""
    webhook_allow: str = ""
    """Comma-separated networks (`127.0.0.0/8`) and host names webhooks may reach although
    they are not public addresses, and over plain http (docs/webhooks.md). Empty: only https
    to public addresses."""
    webhook_timeout_seconds: float = 10.0
    """A webhook delivery attempt without an answer within this long fails (and is retried)."""
    webhook_retry_schedule: str = "5,300,1800,7200,18000,36000"
    """Seconds before each retry of a failed webhook delivery (±10 percent jitter); after the last
    step the delivery is given up and shown as failed. The default retries for about 17 h."""
    webhooks_per_operator: int = 10
    """Most webhooks an operator may register."""
    redis_retry_seconds: float = 10.0
    """How long a Redis operation keeps retrying through a failover (a dead primary being
    replaced, a reconnect) before the call fails; commits are safe to retry (docs/operations.md,
    "Failover")."""
    redis_wait_replicas: int = 0
    """Durability: after each commit wait until this many replicas acknowledged it (Redis
    `WAIT`) before answering; 0: do not wait. Narrows, does not close, the window in which a
    failover loses an acknowledged action (docs/operations.md, "Durability")."""
    redis_wait_timeout_ms: int = 100
    """With `TRUCO_REDIS_WAIT_REPLICAS`: longest wait for the acknowledgements; a commit that
    times out is still answered (it is applied) and counted in `truco_redis_wait_short_total`."""
    ephemeral_store_ok: bool = False
    """The store is meant to lose its data when it restarts (tests, development, a Redis
    without persistence on purpose): the line a worker logs at start-up when the store keeps
    nothing across a restart is then info, not a warning; `truco_store_persistence` and
    `/healthz` still say so (docs/operations.md, "Persistence")."""
    cors_origins: tuple[str, ...] = ()
    """Comma-separated origins (`https://app.example`, `http://localhost:5173`) whose browser
    pages may call the REST face directly (CORS); `*`: any origin. Empty: CORS off
    (docs/rest.md, "Browser apps on other origins")."""
    workers: int = 0
    """Worker processes `truco serve` runs behind the same ports (`SO_REUSEPORT`), with their
    Prometheus metrics aggregated on one `/metrics`. 0: the number of cores this process may
    use (`os.sched_getaffinity`) with a Redis store, 1 with the in-memory store (which lives
    in one process and cannot be shared)."""
    gc_tuning: bool = True
    """After start-up, freeze what the imports made out of the garbage collector's reach and
    set its thresholds to `TRUCO_GC_THRESHOLDS` (`diagnostics.tune_gc`): a full collection
    stopped a worker for 80-150 ms on a test machine, a middle one for up to 25 ms
    (docs/operations.md, "Memory"). 0: Python's defaults."""
    gc_thresholds: str = "50000,3,10"
    """The collector's three thresholds with `TRUCO_GC_TUNING` (`gc.set_threshold`): a young
    collection after this many new objects (net of those freed), a middle one every this many
    young ones, a full one every this many middle ones. Python's defaults are 700,10,10. A
    move's objects live for the move, and at 50,000 nearly all are freed before a young
    collection comes, never walked: the collector's share of a saturated worker's CPU is
    0.2 % instead of 7.7-7.8 % at 300,3,1000, for a young pause of about 20 ms every 10-20 s
    under load instead of many of 0.1-4 ms (docs/benchmarks.md, "The garbage collector's
    share")."""
    reuse_port: bool = False
    """Bind the gRPC and REST ports with `SO_REUSEPORT`, so that several workers share them
    (set by `truco serve --workers N` for its workers; otherwise two servers must never share a
    port by accident)."""

    @property
    def effective_workers(self) -> int:
        """The worker processes to run: `workers`, or its default (see `workers`)."""
        if self.workers:
            return self.workers
        if self.redis_url is None:
            return 1
        return max(
            1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        )

    readiness_interval_seconds: float = 1.0
    """How often the worker PINGs its store; health (readiness) is NOT_SERVING while the store
    does not answer within this time, SERVING again as soon as it does."""
    quota_streams: int = 16
    """Most streams one match credential (seat or spectator token) may hold open at once,
    counted over every worker of the store; 0: no limit (docs/operations.md, "Quotas")."""
    max_streams_per_worker: int = 10_000
    """Most streams one worker holds open at once, over every credential and surface
    (observation streams, the player connection's subscriptions over gRPC and WebSocket): one
    more is refused RESOURCE_EXHAUSTED (quota `worker_streams`, retry in 1 s). It bounds what
    readers that never read can make a worker hold (about 65 KB of RSS a stream;
    docs/operations.md, "Memory"); 0: no bound."""
    quota_actions_per_second: float = 50.0
    """Actions per second one seat credential may submit, over every worker (a burst of as
    many is allowed); 0: no limit."""
    quota_matches_per_minute: float = 6000.0
    """Matches one operator may create per minute, over every worker (a burst of a tenth of
    that, at least 1, is allowed); 0: no limit."""
    quota_live_matches: int = 10_000
    """Matches of one operator that may be live (not finished, cancelled or aborted) at once;
    0: no limit."""
    quota_stored_bytes_per_day: int = 2 * 1024**3
    """Bytes of new matches (settings, labels, first state) one operator may store per day,
    at most that much at once; 0: no limit."""
    memory_trim_after_streams: int = 1000
    """After this many streams were cut (cancelled by a client that left or never read, or
    failed; not those that ended with their match), the worker collects garbage and hands the
    memory its allocator keeps free back to the system (jemalloc's purge, glibc's
    ``malloc_trim``), at most every 5 s; 0: never (docs/operations.md, "Memory")."""
    bot_think_ms: int = 1500
    """How long the server's bots think over a decision, on average (each between 0.6 and 1.4
    times this, a forced move half that), 200 to 60000 ms; a match's `settings.bot_think_time`
    wins (docs/bots.md, "Seats the server plays")."""
    bot_cpu_ms: int = 250
    """CPU budget of one decision of the server's bots: the searching levels stop at this much
    CPU time; the others take far less."""
    bot_processes: int = 1
    """Processes a worker makes its bots' decisions in (a pool beside the event loop, so a
    search never stalls the worker's other matches)."""
    heap_snapshot_dir: str | None = None
    """A directory where a worker started with `PYTHONTRACEMALLOC=1` writes a heap snapshot on
    SIGUSR1 (`heap-<pid>-<n>.tracemalloc`, read with the standard `tracemalloc` module, and a
    count of live objects by type beside it); unset: the current directory
    (docs/operations.md, "Memory"). Without tracing, SIGUSR1 only logs the allocators'
    figures (`memory figures`) and a warning."""

    @property
    def store_description(self) -> str:
        """'in-memory' or the Redis URL with any password hidden (safe to print)."""
        return "in-memory" if self.redis_url is None else redact_url(self.redis_url)

    def api_key_for(self, secret: str) -> ApiKey | None:
        """The API key of `TRUCO_API_KEYS` with this secret, if any (the worker's
        `truco_server.api.auth.KeyRing` adds the keys file)."""
        return find_api_key(self.api_keys, secret)


@dataclass(frozen=True)
class Option:
    """Declaration of one setting: where it comes from and how it is parsed."""

    name: str
    """`Settings` field name."""
    env: str
    """Environment variable."""
    flag: str | None
    """Command-line flag; None for secrets (environment only)."""
    parse: Callable[[str], Any]
    """Parser from text; raises ValueError with a short explanation."""
    metavar: str = "VALUE"


OPTIONS: tuple[Option, ...] = (
    Option("redis_url", "REDIS_URL", "--redis", _redis_url, "URL"),
    Option("host", "TRUCO_HOST", "--host", str.strip, "ADDR"),
    Option("grpc_port", "TRUCO_GRPC_PORT", "--grpc-port", _port, "PORT"),
    Option("http_port", "TRUCO_HTTP_PORT", "--http-port", _port, "PORT"),
    Option("metrics_port", "TRUCO_METRICS_PORT", "--metrics-port", _port, "PORT"),
    Option("api_keys", "TRUCO_API_KEYS", None, parse_api_keys),
    Option("api_keys_file", "TRUCO_API_KEYS_FILE", "--api-keys-file", _path, "PATH"),
    Option(
        "api_keys_poll_seconds",
        "TRUCO_API_KEYS_POLL_SECONDS",
        "--api-keys-poll",
        _positive_float,
        "SECONDS",
    ),
    Option("log_level", "TRUCO_LOG_LEVEL", "--log-level", _log_level, "LEVEL"),
    Option(
        "shutdown_grace_seconds",
        "TRUCO_SHUTDOWN_GRACE_SECONDS",
        "--shutdown-grace",
        _non_negative_float,
        "SECONDS",
    ),
    Option(
        "shutdown_drain_seconds",
        "TRUCO_SHUTDOWN_DRAIN_SECONDS",
        "--shutdown-drain",
        _non_negative_float,
        "SECONDS",
    ),
    Option(
        "heartbeat_interval_seconds",
        "TRUCO_HEARTBEAT_INTERVAL_SECONDS",
        "--heartbeat-interval",
        _positive_float,
        "SECONDS",
    ),
    Option(
        "max_concurrent_rpcs", "TRUCO_MAX_CONCURRENT_RPCS", "--max-concurrent-rpcs", _non_negative_int, "N"
    ),
    Option(
        "subscriber_queue_size", "TRUCO_SUBSCRIBER_QUEUE_SIZE", "--subscriber-queue-size", _positive_int, "N"
    ),
    Option("event_log_max_len", "TRUCO_EVENT_LOG_MAX_LEN", "--event-log-max-len", _positive_int, "N"),
    Option(
        "finished_match_ttl_seconds",
        "TRUCO_FINISHED_MATCH_TTL_SECONDS",
        "--finished-match-ttl",
        _positive_int,
        "SECONDS",
    ),
    Option(
        "max_connection_age_seconds",
        "TRUCO_MAX_CONNECTION_AGE_SECONDS",
        "--max-connection-age",
        _non_negative_float,
        "SECONDS",
    ),
    Option(
        "idle_timeout_seconds", "TRUCO_IDLE_TIMEOUT_SECONDS", "--idle-timeout", _non_negative_int, "SECONDS"
    ),
    Option(
        "scheduler_tick_seconds",
        "TRUCO_SCHEDULER_TICK_SECONDS",
        "--scheduler-tick",
        _positive_float,
        "SECONDS",
    ),
    Option("webhook_allow", "TRUCO_WEBHOOK_ALLOW", "--webhook-allow", str.strip, "LIST"),
    Option("workers", "TRUCO_WORKERS", "--workers", _non_negative_int, "N"),
    Option("reuse_port", "TRUCO_REUSE_PORT", None, _flag),
    Option("gc_tuning", "TRUCO_GC_TUNING", None, _flag),
    Option("gc_thresholds", "TRUCO_GC_THRESHOLDS", None, _gc_thresholds),
    Option(
        "webhook_timeout_seconds",
        "TRUCO_WEBHOOK_TIMEOUT_SECONDS",
        "--webhook-timeout",
        _positive_float,
        "SECONDS",
    ),
    Option(
        "webhook_retry_schedule",
        "TRUCO_WEBHOOK_RETRY_SCHEDULE",
        "--webhook-retry-schedule",
        _retry_schedule,
        "SECONDS,...",
    ),
    Option(
        "webhooks_per_operator", "TRUCO_WEBHOOKS_PER_OPERATOR", "--webhooks-per-operator", _positive_int, "N"
    ),
    Option("redis_retry_seconds", "TRUCO_REDIS_RETRY_SECONDS", "--redis-retry", _positive_float, "SECONDS"),
    Option(
        "redis_wait_replicas", "TRUCO_REDIS_WAIT_REPLICAS", "--redis-wait-replicas", _non_negative_int, "N"
    ),
    Option(
        "redis_wait_timeout_ms", "TRUCO_REDIS_WAIT_TIMEOUT_MS", "--redis-wait-timeout", _positive_int, "MS"
    ),
    Option("ephemeral_store_ok", "TRUCO_EPHEMERAL_STORE_OK", "--ephemeral-store-ok", _flag, "0|1"),
    Option("cors_origins", "TRUCO_CORS_ORIGINS", "--cors-origins", parse_cors_origins, "LIST"),
    Option(
        "readiness_interval_seconds",
        "TRUCO_READINESS_INTERVAL_SECONDS",
        "--readiness-interval",
        _positive_float,
        "SECONDS",
    ),
    Option("quota_streams", "TRUCO_QUOTA_STREAMS", "--quota-streams", _non_negative_int, "N"),
    Option(
        "max_streams_per_worker",
        "TRUCO_MAX_STREAMS_PER_WORKER",
        "--max-streams-per-worker",
        _non_negative_int,
        "N",
    ),
    Option(
        "quota_actions_per_second",
        "TRUCO_QUOTA_ACTIONS_PER_SECOND",
        "--quota-actions-per-second",
        _non_negative_float,
        "N",
    ),
    Option(
        "quota_matches_per_minute",
        "TRUCO_QUOTA_MATCHES_PER_MINUTE",
        "--quota-matches-per-minute",
        _non_negative_float,
        "N",
    ),
    Option("quota_live_matches", "TRUCO_QUOTA_LIVE_MATCHES", "--quota-live-matches", _non_negative_int, "N"),
    Option(
        "quota_stored_bytes_per_day",
        "TRUCO_QUOTA_STORED_BYTES_PER_DAY",
        "--quota-stored-bytes-per-day",
        _non_negative_int,
        "BYTES",
    ),
    Option(
        "memory_trim_after_streams",
        "TRUCO_MEMORY_TRIM_AFTER_STREAMS",
        "--memory-trim-after-streams",
        _non_negative_int,
        "N",
    ),
    Option("heap_snapshot_dir", "TRUCO_HEAP_SNAPSHOT_DIR", "--heap-snapshot-dir", _path, "DIR"),
    Option("bot_think_ms", "TRUCO_BOT_THINK_MS", "--bot-think", _bot_think_ms, "MS"),
    Option("bot_cpu_ms", "TRUCO_BOT_CPU_MS", "--bot-cpu", _positive_int, "MS"),
    Option("bot_processes", "TRUCO_BOT_PROCESSES", "--bot-processes", _positive_int, "N"),
)


def _field_docs() -> dict[str, str]:
    """Field docstrings of `Settings` (the string literal after each field)."""
    import ast
    import inspect

    try:
        tree = ast.parse(inspect.getsource(Settings))
    except (OSError, TypeError):  # no source shipped: help texts without descriptions
        return {}
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, nxt in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one flag per option to `parser`. Defaults are None so absence is detectable."""
    docs = _field_docs()
    defaults = Settings()
    for opt in OPTIONS:
        if opt.flag is None:
            continue
        default = getattr(defaults, opt.name)
        parser.add_argument(
            opt.flag,
            dest=opt.name,
            default=None,
            metavar=opt.metavar,
            help=f"{docs.get(opt.name, '')} [env {opt.env}; default {_show(default)}]".replace("%", "%%"),
        )


def _show(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, tuple):
        return "none" if not value else ",".join(map(str, value))
    return str(value)


def load_settings(
    args: argparse.Namespace | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Resolve every option: flag (from `args`) > environment (`env`) > default."""
    environ = os.environ if env is None else env
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        raw: str | None = None
        source = ""
        flag_value = getattr(args, opt.name, None) if args is not None else None
        if opt.flag is not None and flag_value is not None:
            raw, source = str(flag_value), opt.flag
        elif environ.get(opt.env) not in (None, ""):
            raw, source = environ[opt.env], opt.env
        if raw is None:
            continue
        try:
            values[opt.name] = opt.parse(raw)
        except ConfigError:
            raise
        except ValueError as exc:
            shown = "<redacted>" if opt.name in ("api_keys", "redis_url") else repr(raw)
            raise ConfigError(f"{source}: invalid value {shown}: {exc}") from None
    return Settings(**values)


def parse_settings(argv: Sequence[str], env: Mapping[str, str] | None = None) -> Settings:
    """Parse `argv` (flags only) and the environment into `Settings`."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return load_settings(parser.parse_args(list(argv)), env)


def settings_markdown_table() -> str:
    """The configuration table for docs/operations.md, generated from `OPTIONS`."""
    docs = _field_docs()
    defaults = Settings()
    lines = [
        "| environment variable | flag | default | meaning |",
        "|---|---|---|---|",
    ]
    for opt in OPTIONS:
        default = _show(getattr(defaults, opt.name))
        flag = f"`{opt.flag}`" if opt.flag else "(environment only)"
        lines.append(f"| `{opt.env}` | {flag} | `{default}` | {docs.get(opt.name, '')} |")
    return "\n".join(lines)


if __name__ == "__main__":  # python -m truco_server.core.config  -> the docs table
    print(settings_markdown_table())

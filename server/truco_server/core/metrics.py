"""Every Prometheus metric of the worker, in one place.

Conventions: `truco_` prefix for application metrics, base units (`_seconds`), `_total`
for counters, and no match, seat or request labels (unbounded cardinality). The gRPC
server metrics use the go-grpc-prometheus names so existing dashboards work; they are
recorded by `truco_server.transports.grpc.servicers` for every RPC.

Metrics live in the default registry (`prometheus_client.REGISTRY`), which the
`/metrics` endpoint (`start_metrics_server`) serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client import start_http_server as _start_http_server

# --- gRPC server (go-grpc-prometheus names) ------------------------------------------------

_GRPC_LABELS = ("grpc_type", "grpc_service", "grpc_method")

GRPC_SERVER_STARTED = Counter(
    "grpc_server_started_total",
    "Total number of RPCs started on the server.",
    _GRPC_LABELS,
)
GRPC_SERVER_HANDLED = Counter(
    "grpc_server_handled_total",
    "Total number of RPCs completed on the server, regardless of success or failure.",
    (*_GRPC_LABELS, "grpc_code"),
)
GRPC_SERVER_MSG_RECEIVED = Counter(
    "grpc_server_msg_received_total",
    "Total number of RPC stream messages received on the server.",
    _GRPC_LABELS,
)
GRPC_SERVER_MSG_SENT = Counter(
    "grpc_server_msg_sent_total",
    "Total number of gRPC stream messages sent by the server.",
    _GRPC_LABELS,
)
GRPC_SERVER_HANDLING_SECONDS = Histogram(
    "grpc_server_handling_seconds",
    "Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.",
    _GRPC_LABELS,
    buckets=(
        0.0005,
        0.001,
        0.0025,
        0.005,
        0.01,
        0.025,
        0.05,
        0.1,
        0.25,
        0.5,
        1,
        2.5,
        5,
        10,
        30,
        60,
        300,
        1800,
    ),
)

# --- application ----------------------------------------------------------------------------

MATCHES_CREATED = Counter(
    "truco_matches_created_total",
    "Matches created (idempotent retries not counted).",
)
ACTIONS = Counter(
    "truco_actions_total",
    "Actions submitted, by result: accepted, replayed (idempotent retry), illegal, "
    "stale (expected_version mismatch), invalid (malformed), error.",
    ("result",),
)
STREAM_SUBSCRIBERS = Gauge(
    "truco_stream_subscribers",
    "Observation streams currently open on this worker.",
    multiprocess_mode="livesum",  # `truco serve --workers N`: the sum over the live workers
)
LIFECYCLE_STEPS = Counter(
    "truco_lifecycle_steps_total",
    "Steps the server made in a match by itself, by cause: clock (a default move or a forfeit "
    "for a seat out of time), disconnected (a default move for an away seat, or a bot taking "
    "it over), server (an abort: a seat did not join, or the match idled), bot (a decision of "
    "the server's bot).",
    ("cause",),
)
QUEUE_CLAIMS = Counter(
    "truco_queue_claims_total",
    "Items this worker claimed from a sharded queue: clock (match wakeups) or webhook (deliveries).",
    ("queue",),
)
QUEUE_LAG_SECONDS = Histogram(
    "truco_queue_lag_seconds",
    "How late a claimed queue item was handled (claim time minus due time), by queue.",
    ("queue",),
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
OPERATOR_EVENTS = Counter(
    "truco_operator_events_total",
    "Lifecycle events relayed to operator streams, by type (a relay repeated after a fault counts again).",
    ("type",),
)
WEBHOOK_DELIVERIES = Counter(
    "truco_webhook_attempts_total",
    "Webhook delivery attempts by result: delivered, retry (failed, another attempt is "
    "due), failed (given up).",
    ("result",),
)
WEBHOOK_SECONDS = Histogram(
    "truco_webhook_attempt_seconds",
    "Duration of one webhook delivery attempt.",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
TICKETS = Counter(
    "truco_tickets_total",
    "Matchmaking tickets by what became of them: created, matched, cancelled, expired.",
    ("result",),
)
TICKET_WAIT_SECONDS = Histogram(
    "truco_ticket_wait_seconds",
    "Time from a ticket's creation to its table's match (time to match).",
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800),
)
FORMATION_SECONDS = Histogram(
    "truco_formation_seconds",
    "Time from forming a table (its tickets taken) to its tickets matched (the match made, "
    "the events published).",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
BOT_DECISIONS = Counter(
    "truco_bot_decisions_total",
    "Decisions of the server's bots (seats the server plays, or took over), by level and "
    "result: committed, or superseded (the match moved on first: another worker's commit, "
    "or the seat's player acted).",
    ("level", "result"),
)
BOT_DECISION_CPU_SECONDS = Histogram(
    "truco_bot_decision_cpu_seconds",
    "CPU time of one decision of the server's bots (in the worker's bot processes), by level; "
    "bounded by TRUCO_BOT_CPU_MS.",
    ("level",),
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
BOT_DECISION_WAIT_SECONDS = Histogram(
    "truco_bot_decision_wait_seconds",
    "Wall time from asking the bot processes for a decision to its answer (queueing included): "
    "near the CPU time while the worker keeps up with its bot seats.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)
COMMIT_CONFLICTS = Counter(
    "truco_commit_conflicts_total",
    "Atomic commits rejected because another writer changed the match first.",
)
REDIS_SECONDS = Histogram(
    "truco_redis_seconds",
    "Wall time of the Redis store's operations (create, load, commit, lookup_request, "
    "read_events, list_matches), round trip included.",
    ("operation",),
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
)
REDIS_RETRIES = Counter(
    "truco_redis_retries_total",
    "Redis store operations retried after a connection error, a failover or a cluster "
    "redirection (retried for up to TRUCO_REDIS_RETRY_SECONDS).",
    ("operation",),
)
REDIS_UNAVAILABLE = Counter(
    "truco_redis_unavailable_total",
    "Redis store operations that gave up after TRUCO_REDIS_RETRY_SECONDS of retries.",
    ("operation",),
)
REDIS_LANE_ENDS = Counter(
    "truco_redis_lane_ends_total",
    "Ends of a connection the Redis store's script batches share (a lane: one per server or "
    "cluster node; the next batch opens another): lost, demoted (the server is no longer the "
    "primary), unreadable or unasked (a reply that is none, or that no batch asked for), "
    "dropped (by the store, after a connection fault or a timeout, or at its close).",
    ("reason",),
)
REDIS_WAIT_SHORT = Counter(
    "truco_redis_wait_short_total",
    "Commits whose WAIT timed out before TRUCO_REDIS_WAIT_REPLICAS replicas acknowledged them.",
)
STREAM_GAPS = Counter(
    "truco_stream_gaps_total",
    "Match streams whose log no longer continues what this worker delivered (events lost or "
    "rewritten by a failover, or trimmed while disconnected): their subscribers get a snapshot.",
)
STREAM_CATCH_UPS = Counter(
    "truco_stream_catch_ups_total",
    "Match streams whose heartbeat found the store ahead of what they delivered (the feed "
    "was later than a heartbeat interval, or missed a commit): they sent the update then.",
)
STREAM_HUB_FAILURES = Counter(
    "truco_stream_hub_failures_total",
    "Unexpected errors (bugs, not Redis faults) that stopped a stream hub's loop: the hub "
    "restarts it and checks every followed stream again.",
)
API_KEYS = Gauge(
    "truco_api_keys",
    "Operator API keys this worker accepts (TRUCO_API_KEYS plus TRUCO_API_KEYS_FILE); the "
    "'api keys loaded' log line names their fingerprints.",
    multiprocess_mode="liveall",  # one value per worker: a worker that missed a reload shows
)
API_KEY_RELOADS = Counter(
    "truco_api_key_reloads_total",
    "Re-reads of TRUCO_API_KEYS_FILE after it changed (or on SIGHUP), by result: loaded, or "
    "error (unreadable or invalid: the last good keys stay).",
    ("result",),
)
ORPHANED_WORK = Counter(
    "truco_orphaned_work_dropped_total",
    "Work dropped because what it belongs to no longer exists, by parent: league (a league "
    "job's pass, with its matches and ratings), bot (an assignment to a bot account), webhook "
    "(a delivery). Deleted, or lost with a Redis that restarted without persistence; the "
    "write the work would have made was refused.",
    ("parent",),
)
STORE_PERSISTENCE = Gauge(
    "truco_store_persistence",
    "Whether the store keeps its data across a restart, as this worker last read it: 1 every "
    "Redis primary has the append-only file or RDB snapshots on; 0 some primary has neither, "
    "or the store is in memory; -1 it could not be read (CONFIG refused, no answer).",
    multiprocess_mode="liveall",  # one value per worker
)
#: Allowed values of the `result` label of `truco_actions_total`.
ACTION_RESULTS = ("accepted", "replayed", "illegal", "stale", "invalid", "error")


@dataclass
class MetricsServer:
    """A running `/metrics` HTTP endpoint (a daemon thread); `close()` stops it."""

    server: WSGIServer
    thread: Thread

    @property
    def port(self) -> int:
        return int(self.server.server_port)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def start_metrics_server(
    port: int, host: str = "127.0.0.1", registry: CollectorRegistry = REGISTRY
) -> MetricsServer | None:
    """Serve `/metrics` on `host:port` in a thread; None (nothing started) when port is 0."""
    if port <= 0:
        return None
    server, thread = _start_http_server(port, addr=host, registry=registry)
    return MetricsServer(server, thread)

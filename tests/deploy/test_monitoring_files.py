"""Prometheus and Grafana of ``deploy/docker-compose.yml``, checked as data (this machine
has no Docker engine to run them).

- Every metric a dashboard query uses is one the worker exports, with the labels the query
  filters, groups or names its legend by. The exported names and labels are read from
  prometheus-client's registry after importing the server's metric modules, i.e. what a
  worker's ``/metrics`` serves (plus the ``job``/``instance`` labels and the ``up`` series
  that Prometheus adds to every scrape).
- The compose file parses, every file it mounts exists, Prometheus scrapes exactly the
  workers' metrics ports, Grafana's data source points at that Prometheus and its
  dashboard provider at the mounted dashboards, and every dashboard refers to that data
  source and to the scrape job by their real names.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import REGISTRY
from prometheus_client.metrics import MetricWrapperBase

import truco_server.core.metrics
import truco_server.transports.grpc.server
import truco_server.transports.grpc.servicers
import truco_server.transports.rest.app
from truco_server.core.config import Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "docker-compose.yml"
PROMETHEUS = DEPLOY / "prometheus.yml"
GRAFANA = DEPLOY / "grafana"
DASHBOARDS = sorted((GRAFANA / "dashboards").glob("*.json"))
DEFAULTS = Settings()

#: Modules that declare the worker's metrics (importing them registers the metrics).
METRIC_MODULES = (
    truco_server.core.metrics,
    truco_server.transports.rest.app,
    truco_server.transports.grpc.servicers,
)
#: Series names each metric type exposes, by suffix (prometheus-client's text format).
SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
    "info": ("_info",),
}
#: Labels Prometheus attaches to every scraped series, and the series it makes per target.
TARGET_LABELS = {"job", "instance"}
SCRAPE_SERIES = ("up", "scrape_duration_seconds", "scrape_samples_scraped")

FUNCTIONS = {
    "sum", "avg", "max", "min", "count", "topk", "bottomk", "rate", "irate", "increase",
    "histogram_quantile", "clamp_min", "clamp_max", "abs", "sort", "sort_desc",
}  # fmt: skip
KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
}
STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
RANGE = re.compile(r"\[[^\]]*\]")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)")
SELECTOR = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}")
MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
LEGEND_LABEL = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
LABEL_VALUES = re.compile(r"^label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)$")


# ------------------------------------------------------------------------------ exported
def exported_series() -> dict[str, set[str]]:
    """Every series name a worker's /metrics (scraped by Prometheus) has, with its labels."""
    declared: dict[str, set[str]] = {}
    for module in METRIC_MODULES:
        for obj in vars(module).values():
            if isinstance(obj, MetricWrapperBase):
                # prometheus-client keeps the declared label names only privately.
                declared[obj._name] = set(obj._labelnames)
    series: dict[str, set[str]] = {}
    for family in REGISTRY.collect():
        labels = declared.get(family.name, set()) | {k for s in family.samples for k in s.labels}
        for suffix in SUFFIXES.get(family.type, ("",)):
            extra = (
                {"le"}
                if suffix == "_bucket"
                else {"quantile"}
                if family.type == "summary" and not suffix
                else set()
            )
            series[family.name + suffix] = labels | extra | TARGET_LABELS
    for name in SCRAPE_SERIES:
        series[name] = set(TARGET_LABELS)
    return series


def test_the_registry_holds_the_workers_metrics() -> None:
    series = exported_series()
    for name in (
        "grpc_server_handled_total",
        "grpc_server_handling_seconds_bucket",
        "truco_actions_total",
        "truco_stream_subscribers",
        "truco_http_requests_total",
        "process_cpu_seconds_total",
    ):
        assert name in series, name
    assert {"grpc_code", "grpc_method", "grpc_type", "job"} <= series["grpc_server_handled_total"]
    assert "le" in series["grpc_server_handling_seconds_bucket"]
    assert series["truco_actions_total"] >= {"result"}


# ------------------------------------------------------------------------------ PromQL
def query_parts(expr: str) -> tuple[list[tuple[str, set[str]]], set[str]]:
    """The series a PromQL expression selects (each with the labels its matchers use) and
    the labels it groups by. Unknown function names fail, so nothing is skipped silently."""
    text = RANGE.sub("", STRING.sub('""', expr))
    grouping: set[str] = set()
    for body in GROUPING.findall(text):
        grouping |= {label.strip() for label in body.split(",") if label.strip()}
    text = GROUPING.sub(" ", text)
    matchers: dict[int, set[str]] = {}

    def strip_matchers(m: re.Match[str]) -> str:
        matchers[m.start()] = set(MATCHER.findall(m.group(2)))
        return m.group(1) + " " * (len(m.group(0)) - len(m.group(1)))

    text = SELECTOR.sub(strip_matchers, text)
    selected: list[tuple[str, set[str]]] = []
    for m in IDENTIFIER.finditer(text):
        word = m.group(0)
        if text[m.end() :].lstrip().startswith("("):
            assert word in FUNCTIONS, f"unknown PromQL function {word!r} in {expr!r}"
        elif word not in KEYWORDS:
            selected.append((word, matchers.get(m.start(), set())))
    return selected, grouping


def test_query_parts_reads_series_matchers_and_grouping() -> None:
    selected, grouping = query_parts(
        'histogram_quantile(0.99, sum by (le, route) (rate(x_bucket{job="j", a!~"S.*"}[$__rate_interval])))'
        " / on (route) group_left sum(y_total)"
    )
    assert selected == [("x_bucket", {"job", "a"}), ("y_total", set())]
    assert grouping == {"le", "route"}
    with pytest.raises(AssertionError, match="unknown PromQL function"):
        query_parts("made_up(x_total)")


def dashboard(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def panels(board: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for panel in board.get("panels", []):
        found.append(panel)
        found.extend(panel.get("panels", []))  # rows
    return [p for p in found if p.get("type") != "row"]


def test_there_is_a_dashboard() -> None:
    assert DASHBOARDS, "no dashboard in deploy/grafana/dashboards"


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_every_dashboard_query_uses_exported_metrics_and_labels(path: Path) -> None:
    series = exported_series()
    board = dashboard(path)
    queries = 0
    for panel in panels(board):
        targets = panel.get("targets") or []
        assert targets, f"panel {panel.get('title')!r} has no query"
        for target in targets:
            expr = target["expr"]
            selected, grouping = query_parts(expr)
            assert selected, f"{expr!r} selects no series"
            available: set[str] = set()
            for name, used in selected:
                assert name in series, f"panel {panel['title']!r}: {name} is not exported by the worker"
                assert used <= series[name], f"{name} has no label {sorted(used - series[name])}"
                available |= series[name]
            assert grouping <= available, f"{expr!r} groups by {sorted(grouping - available)}: no such label"
            legend = set(LEGEND_LABEL.findall(target.get("legendFormat", "")))
            assert legend <= (grouping or available), f"legend {target['legendFormat']!r} of {expr!r}"
            queries += 1
    for variable in board.get("templating", {}).get("list", []):
        query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
        match = LABEL_VALUES.match(query)
        assert match, f"variable {variable['name']}: not a label_values() query: {query!r}"
        selected, _ = query_parts(match.group(1))
        assert all(name in series and match.group(2) in series[name] for name, _ in selected), query
    assert queries >= 10


# ------------------------------------------------------------------------------ files
def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def services() -> dict[str, Any]:
    data = load_yaml(COMPOSE)
    assert isinstance(data, dict)
    return dict(data["services"])


def worker_services() -> dict[str, Any]:
    return {name: svc for name, svc in services().items() if "build" in svc}


def bind_mounts(service: dict[str, Any]) -> dict[str, Path]:
    """container path -> host path of each `./host:/container[:ro]` volume."""
    mounts: dict[str, Path] = {}
    for volume in service.get("volumes", []):
        source, target, *_ = str(volume).split(":")
        if source.startswith("."):
            mounts[target] = (COMPOSE.parent / source).resolve()
    return mounts


def published(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(host address, host port, container port) of each `ports` entry."""
    out = []
    for mapping in service.get("ports", []):
        host, host_port, container = str(mapping).split(":")
        out.append((host, int(host_port), int(container)))
    return out


def scrape_job() -> dict[str, Any]:
    config = load_yaml(PROMETHEUS)
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "truco-workers"]
    return dict(job)


def test_compose_mounts_existing_files_and_publishes_on_loopback_only() -> None:
    svcs = services()
    assert {"prometheus", "grafana"} <= set(svcs)
    for name in ("prometheus", "grafana"):
        image = str(svcs[name]["image"])
        assert ":" in image and not image.endswith(":latest"), f"{name}: pin the image tag"
        mounts = bind_mounts(svcs[name])
        assert mounts, f"{name} mounts nothing"
        for target, source in mounts.items():
            assert source.exists(), f"{name}: {source} (mounted at {target}) does not exist"
            assert source.is_relative_to(DEPLOY)
    ports = [p for svc in svcs.values() for p in published(svc)]
    assert all(host == "127.0.0.1" for host, _, _ in ports), ports
    assert len({p for _, p, _ in ports}) == len(ports), "two services publish the same host port"
    assert bind_mounts(svcs["prometheus"])["/etc/prometheus/prometheus.yml"] == PROMETHEUS


def test_prometheus_scrapes_every_worker_metrics_port() -> None:
    job = scrape_job()
    assert job.get("metrics_path", "/metrics") == "/metrics"
    targets = {t for group in job["static_configs"] for t in group["targets"]}
    workers = worker_services()
    assert len(workers) == 2
    env_files = [DEPLOY / "example.env"]
    assert all("TRUCO_METRICS_PORT" not in path.read_text(encoding="utf-8") for path in env_files)
    for svc in workers.values():
        assert "TRUCO_METRICS_PORT" not in (svc.get("environment") or {})
        assert DEFAULTS.metrics_port in {container for _, _, container in published(svc)}
    assert targets == {f"{name}:{DEFAULTS.metrics_port}" for name in workers}
    depends = services()["prometheus"].get("depends_on", [])
    assert set(depends) == set(workers)


def test_grafana_provisions_the_prometheus_and_the_dashboards() -> None:
    svcs = services()
    mounts = bind_mounts(svcs["grafana"])
    provisioning = mounts["/etc/grafana/provisioning"]
    assert provisioning == GRAFANA / "provisioning"
    (source,) = load_yaml(provisioning / "datasources" / "prometheus.yml")["datasources"]
    prometheus_port = published(svcs["prometheus"])[0][2]
    assert source["type"] == "prometheus" and source["url"] == f"http://prometheus:{prometheus_port}"
    (provider,) = load_yaml(provisioning / "dashboards" / "truco.yml")["providers"]
    assert mounts[provider["options"]["path"]] == GRAFANA / "dashboards"
    home = svcs["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home.startswith(provider["options"]["path"] + "/")
    assert (GRAFANA / "dashboards" / Path(home).name).exists()

    job_name = scrape_job()["job_name"]
    uids = set()
    for path in DASHBOARDS:
        board = dashboard(path)
        assert board["uid"] not in uids and board["title"]
        uids.add(board["uid"])
        text = path.read_text(encoding="utf-8")
        refs = re.findall(r'"uid":\s*"([^"]+)"', text)
        assert set(refs) - {board["uid"]} == {source["uid"]}, f"{path.name}: unknown data source {set(refs)}"
        jobs = set(re.findall(r'job=\\"([^"\\]*)\\"', text))
        assert jobs == {job_name}, f"{path.name}: queries select job {jobs}, Prometheus scrapes {job_name!r}"
        ids = [p["id"] for p in panels(board)]
        assert len(ids) == len(set(ids)), f"{path.name}: duplicate panel ids"

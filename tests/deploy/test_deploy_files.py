"""The deployment files (deploy/, helm/truco/) checked against the worker's real
configuration, and an end-to-end run of ``deploy/local_cluster.py`` on real processes.

Needs neither docker nor helm: the Dockerfile and the chart templates are checked as text,
values.yaml, Chart.yaml and docker-compose.yml as YAML. Every environment variable they set
must be a setting declared in ``truco_server.core.config.OPTIONS`` (a typo there would be
silently ignored by the worker).
"""

from __future__ import annotations

import fnmatch
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import tomllib
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest
import yaml

from tests.helpers.scripts import load_script
from truco_contract.pb import match_pb2, match_service_pb2, match_service_pb2_grpc
from truco_server.core.config import OPTIONS, Settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CHART = ROOT / "helm" / "truco"
TEMPLATES = CHART / "templates"
DOCKERFILE = DEPLOY / "Dockerfile"
COMPOSE = DEPLOY / "docker-compose.yml"
EXAMPLE_ENV = DEPLOY / "example.env"

SETTINGS_ENV = frozenset(opt.env for opt in OPTIONS)
DEFAULTS = Settings()
#: Variables the Dockerfile may set that are not worker settings (Python / pip runtime).
RUNTIME_ENV = frozenset(
    {
        "PATH",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "PIP_NO_CACHE_DIR",
        "PIP_DISABLE_PIP_VERSION_CHECK",
        "LD_PRELOAD",
        "PYTHONMALLOC",
        "MALLOC_CONF",
    }
)
#: Settings the chart must set itself (the rest may come through extraEnv).
CHART_ENV = frozenset(
    {
        "REDIS_URL",
        "TRUCO_API_KEYS_FILE",
        "TRUCO_HOST",
        "TRUCO_GRPC_PORT",
        "TRUCO_HTTP_PORT",
        "TRUCO_METRICS_PORT",
        "TRUCO_LOG_LEVEL",
        "TRUCO_SHUTDOWN_GRACE_SECONDS",
        "TRUCO_SHUTDOWN_DRAIN_SECONDS",
    }
)
ENV_ENTRY = re.compile(r"^\s*-\s*name:\s*([A-Z][A-Z0-9_]*)\s*$", re.MULTILINE)
ENV_NAME_ANYWHERE = re.compile(r"\bname:\s*([A-Z][A-Z0-9_]*)\b")
VALUES_REF = re.compile(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


# ------------------------------------------------------------------------------ readers
def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def values() -> dict[str, Any]:
    data = load_yaml(CHART / "values.yaml")
    assert isinstance(data, dict)
    return data


def compose() -> dict[str, Any]:
    data = load_yaml(COMPOSE)
    assert isinstance(data, dict)
    return data


def template_files() -> list[Path]:
    return sorted(p for p in TEMPLATES.iterdir() if p.suffix in (".yaml", ".tpl", ".txt"))


def template_text(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def env_file_names(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an env file (comments and blank lines skipped)."""
    entries: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep, f"{path.name}: not KEY=VALUE: {raw!r}"
        entries[key.strip()] = value.strip()
    return entries


def env_entry_body(text: str, name: str) -> str:
    """The lines of the container env entry `- name: <name>` (those indented past its dash)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == f"- name: {name}"), None)
    assert start is not None, f"no env entry {name}"
    dash = lines[start].index("-")
    body: list[str] = []
    for line in lines[start + 1 :]:
        if line.strip() and len(line) - len(line.lstrip()) <= dash:
            break
        body.append(line)
    return "\n".join(body)


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = pending + line
        pending = ""
        keyword, _, rest = full.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
    return instructions


def dockerfile_env() -> dict[str, str]:
    """Every ``ENV KEY=VALUE`` of the Dockerfile (the last value of each)."""
    env: dict[str, str] = {}
    for keyword, args in dockerfile_instructions():
        if keyword == "ENV":
            for token in shlex.split(args):
                name, sep, value = token.partition("=")
                assert sep, f"Dockerfile: use ENV KEY=VALUE, got {token!r}"
                env[name] = value
    return env


def dockerfile_env_names() -> set[str]:
    return set(dockerfile_env())


def compose_workers() -> dict[str, dict[str, Any]]:
    services = compose()["services"]
    return {name: svc for name, svc in services.items() if "build" in svc or "truco" in str(svc.get("image"))}


def compose_env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(str(item).split("=", 1) for item in env)
    return {str(k): str(v) for k, v in env.items()}


def compose_env_files(service: dict[str, Any]) -> list[tuple[Path, bool]]:
    """(path, required) of each env_file entry of a compose service."""
    entries = service.get("env_file") or []
    if isinstance(entries, str | dict):
        entries = [entries]
    files: list[tuple[Path, bool]] = []
    for entry in entries:
        if isinstance(entry, str):
            files.append((COMPOSE.parent / entry, True))
        else:
            files.append((COMPOSE.parent / entry["path"], bool(entry.get("required", True))))
    return files


def lookup(data: dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.strip(".").split("."):
        assert isinstance(node, dict) and part in node, f".Values{dotted}: no such key in values.yaml"
        node = node[part]
    return node


def seconds(text: str) -> float:
    """Compose durations such as '20s', '1m30s'."""
    match = re.fullmatch(r"(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?", str(text).strip())
    assert match and any(match.groups()), f"not a duration: {text!r}"
    minutes, secs = match.groups()
    return int(minutes or 0) * 60 + float(secs or 0)


def load_local_cluster() -> ModuleType:
    return load_script(DEPLOY / "local_cluster.py", "truco_local_cluster")


# ------------------------------------------------------------------------------ env names
def test_config_exposes_the_settings_this_test_relies_on() -> None:
    assert {"REDIS_URL", "TRUCO_API_KEYS", "TRUCO_GRPC_PORT"} <= SETTINGS_ENV
    api_keys = next(opt for opt in OPTIONS if opt.env == "TRUCO_API_KEYS")
    assert api_keys.flag is None  # environment only: the chart must pass it as env


def test_chart_templates_set_only_real_settings() -> None:
    found: dict[str, set[str]] = {}
    for path in template_files():
        for name in ENV_ENTRY.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, set()).add(path.name)
    unknown = {name: files for name, files in found.items() if name not in SETTINGS_ENV}
    assert not unknown, f"env vars in the chart that are not settings of truco_server.core.config: {unknown}"
    assert set(found) >= CHART_ENV, f"the chart does not set {sorted(CHART_ENV - set(found))}"


def test_chart_reserved_env_list_matches_what_the_deployment_sets() -> None:
    helpers = template_text("_helpers.tpl")
    match = re.search(r'define "truco.reservedEnv" -\}\}\s*(.*?)\s*\{\{-? end', helpers, re.DOTALL)
    assert match, "_helpers.tpl: truco.reservedEnv not found"
    reserved = set(match.group(1).split())
    # plus TRUCO_API_KEYS, which the chart never sets (its keys are a mounted file) and extraEnv
    # may not set either (a plain value would hold the secrets)
    assert reserved == set(ENV_ENTRY.findall(template_text("deployment.yaml"))) | {"TRUCO_API_KEYS"}
    assert reserved <= SETTINGS_ENV


def test_values_yaml_env_names_are_real_settings() -> None:
    text = (CHART / "values.yaml").read_text(encoding="utf-8")
    in_text = set(ENV_NAME_ANYWHERE.findall(text))  # commented extraEnv examples included
    in_values = {entry["name"] for entry in values()["extraEnv"]}
    names = in_text | in_values
    assert names, "values.yaml shows no extraEnv example"
    assert names <= SETTINGS_ENV, f"not settings: {sorted(names - SETTINGS_ENV)}"
    assert not names & CHART_ENV, "extraEnv examples must not repeat what the chart sets"


def test_compose_and_env_files_set_only_real_settings() -> None:
    workers = compose_workers()
    assert workers
    for name, service in workers.items():
        names = set(compose_env(service))
        for path, required in compose_env_files(service):
            if path.exists():
                names |= set(env_file_names(path))
            else:
                assert not required, f"{name}: env_file {path.name} is required but missing"
        assert names <= SETTINGS_ENV, f"{name}: not settings: {sorted(names - SETTINGS_ENV)}"
    example = set(env_file_names(EXAMPLE_ENV))
    assert "TRUCO_API_KEYS" in example
    assert example <= SETTINGS_ENV


def test_dockerfile_sets_only_real_settings_or_runtime_variables() -> None:
    names = dockerfile_env_names()
    assert "PATH" in names  # the parser found the ENV lines
    assert names <= SETTINGS_ENV | RUNTIME_ENV, f"unknown: {sorted(names - SETTINGS_ENV - RUNTIME_ENV)}"
    assert "TRUCO_API_KEYS" not in names and "REDIS_URL" not in names


# ------------------------------------------------------------------------------ secrets
def test_api_keys_come_only_from_a_secret() -> None:
    text = template_text("deployment.yaml")
    # a Secret volume (updated in place when the Secret changes: keys rotate without a restart),
    # mounted whole (a subPath mount is never updated), read as TRUCO_API_KEYS_FILE
    assert "- name: TRUCO_API_KEYS\n" not in text
    volume = env_entry_body(text.split("      volumes:", 1)[1], "api-keys")
    assert "secret:" in volume and "secretName: {{ .Values.apiKeys.existingSecret }}" in volume
    assert "path: api-keys" in volume
    mount = env_entry_body(text.split("volumeMounts:", 1)[1], "api-keys")
    assert "mountPath: /etc/truco/api-keys" in mount and "subPath" not in mount
    body = env_entry_body(text, "TRUCO_API_KEYS_FILE")
    assert "value: /etc/truco/api-keys/api-keys" in body
    for path in template_files():
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"^kind:\s*ConfigMap", text, re.MULTILINE), f"{path.name} makes a ConfigMap"
    for name, service in compose_workers().items():
        assert "TRUCO_API_KEYS" not in compose_env(service), f"{name}: API keys inline in compose"
    assert not [args for _, args in dockerfile_instructions() if "TRUCO_API_KEYS" in args]


def test_example_env_secrets_are_marked_as_placeholders() -> None:
    text = EXAMPLE_ENV.read_text(encoding="utf-8")
    assert "EXAMPLE" in text and "PLACEHOLDER" in text
    for entry in env_file_names(EXAMPLE_ENV)["TRUCO_API_KEYS"].split(","):
        assert "example" in entry.partition("=")[2], f"{entry!r} does not look like a placeholder"


# ------------------------------------------------------------------------------ YAML and chart
def test_yaml_files_parse() -> None:
    chart = load_yaml(CHART / "Chart.yaml")
    assert chart["apiVersion"] == "v2" and chart["name"] == "truco"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert str(chart["appVersion"]) == project["version"]
    assert values()["replicaCount"] == 2
    assert {"redis", "worker-1", "worker-2"} <= set(compose()["services"])


def test_every_values_reference_in_templates_exists() -> None:
    data = values()
    for path in template_files():
        for dotted in VALUES_REF.findall(path.read_text(encoding="utf-8")):
            lookup(data, dotted)


@pytest.mark.parametrize("path", template_files(), ids=lambda p: p.name)
def test_template_blocks_are_balanced(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count("{{") == text.count("}}"), f"{path.name}: unbalanced braces"
    opened = len(re.findall(r"\{\{-?\s*(?:if|range|with|define|block)\b", text))
    closed = len(re.findall(r"\{\{-?\s*end\b", text))
    assert opened == closed, f"{path.name}: {opened} blocks opened, {closed} closed"


def test_probes_use_the_grpc_port() -> None:
    deployment = template_text("deployment.yaml")
    ref = r"\{\{\s*(\.Values[\w.]+)[^}]*\}\}"
    container = re.search(r"- name: grpc\n\s+containerPort: " + ref, deployment)
    env = re.search(r"- name: TRUCO_GRPC_PORT\n\s+value: " + ref, deployment)
    assert container and env
    grpc_port_path = container.group(1)
    assert env.group(1) == grpc_port_path
    # readiness follows the store (the match service's health), liveness the process ("")
    probes = (("startupProbe", '""'), ("readinessProbe", "truco.v1.MatchService"), ("livenessProbe", '""'))
    for probe, name in probes:
        service_line = r"\n\s+service: " + re.escape(name)
        match = re.search(probe + r":\n\s+grpc:\n\s+port: " + ref + service_line, deployment)
        assert match, f"{probe}: no native gRPC probe for service {name}"
        assert match.group(1) == grpc_port_path, f"{probe} checks {match.group(1)}, not {grpc_port_path}"
    service = template_text("service.yaml")
    assert re.search(r"- name: grpc\n\s+port: \{\{\s*" + re.escape(grpc_port_path), service)
    assert re.search(r"- name: grpc\n(?:\s+.*\n)*?\s+targetPort: grpc\n", service)
    port = lookup(values(), grpc_port_path.removeprefix(".Values"))
    assert port == DEFAULTS.grpc_port
    assert lookup(values(), ".service.ports.http") == DEFAULTS.http_port
    assert lookup(values(), ".metrics.port") == DEFAULTS.metrics_port


def test_termination_grace_exceeds_shutdown_grace_plus_drain() -> None:
    default_shutdown = DEFAULTS.shutdown_grace_seconds + DEFAULTS.shutdown_drain_seconds
    v = values()
    chart_shutdown = v["shutdown"]["graceSeconds"] + v["shutdown"]["drainSeconds"]
    assert v["terminationGracePeriodSeconds"] > max(default_shutdown, chart_shutdown)
    example = env_file_names(EXAMPLE_ENV)
    compose_shutdown = float(example.get("TRUCO_SHUTDOWN_GRACE_SECONDS", DEFAULTS.shutdown_grace_seconds))
    compose_shutdown += float(example.get("TRUCO_SHUTDOWN_DRAIN_SECONDS", DEFAULTS.shutdown_drain_seconds))
    for name, service in compose_workers().items():
        assert seconds(service["stop_grace_period"]) > max(default_shutdown, compose_shutdown), name
    cluster_args = load_local_cluster().build_parser().parse_args([])
    assert cluster_args.stop_timeout > default_shutdown


def test_chart_security_and_resources() -> None:
    v = values()
    pod, container = v["podSecurityContext"], v["securityContext"]
    assert pod["runAsNonRoot"] is True and container["readOnlyRootFilesystem"] is True
    assert container["allowPrivilegeEscalation"] is False
    user = next(args for keyword, args in dockerfile_instructions() if keyword == "USER")
    assert user.split(":")[0] == str(pod["runAsUser"])
    for kind in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(v["resources"][kind])
    assert v["metrics"]["serviceMonitor"]["enabled"] is False
    assert v["autoscaling"]["enabled"] is False
    assert v["podDisruptionBudget"]["enabled"] is True


# ------------------------------------------------------------------------------ Dockerfile
def test_dockerfile() -> None:
    instructions = dockerfile_instructions()
    by_keyword: dict[str, list[str]] = {}
    for keyword, args in instructions:
        by_keyword.setdefault(keyword, []).append(args)
    assert all(args.split()[0] == "python:3.11-slim" for args in by_keyword["FROM"])
    final_stage = instructions[max(i for i, (k, _) in enumerate(instructions) if k == "FROM") :]
    users = [args for keyword, args in final_stage if keyword == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    exposed = {int(p.split("/")[0]) for args in by_keyword["EXPOSE"] for p in args.split()}
    assert exposed == {DEFAULTS.grpc_port, DEFAULTS.http_port, DEFAULTS.metrics_port}
    assert json.loads(by_keyword["ENTRYPOINT"][-1]) == ["truco", "serve", "--host", "0.0.0.0"]
    assert by_keyword["STOPSIGNAL"] == ["SIGTERM"]
    installs = [args for args in by_keyword["RUN"] if "pip install" in args]
    assert installs and not any("[dev]" in args or " -e " in args for args in installs)
    assert any("[server]" in args for args in installs)  # the base install is the client side
    copied = {args.split()[0] for args in by_keyword["COPY"] if not args.startswith("--")}
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    top = {p.rstrip("*") for p in folders["include"] if (ROOT / p.rstrip("*")).is_dir()}
    assert top >= {"truco_engine", "truco_match"}  # the "." root's packages
    assert {w for w in folders["where"] if w != "."} | top <= copied
    assert "docker build -f deploy/Dockerfile -t truco-service ." in DOCKERFILE.read_text(encoding="utf-8")


def test_the_image_serves_the_compiled_build() -> None:
    """The build stage compiles the move path (setup.py's ``TRUCO_MYPYC=move-path``) with a C
    compiler the runtime stage does not carry, and checks that the installed project runs it."""
    instructions = dockerfile_instructions()
    last_from = max(i for i, (k, _) in enumerate(instructions) if k == "FROM")
    build = [args for keyword, args in instructions[:last_from] if keyword == "RUN"]
    runtime = [args for keyword, args in instructions[last_from:] if keyword == "RUN"]
    assert any("gcc" in args for args in build) and not any("gcc" in args for args in runtime)
    assert any("TRUCO_MYPYC=move-path" in args and "wheel" in args for args in build)
    # the installed project runs every module setup.py compiles from its extension
    assert any("len(extensions())" in args and "--compiled-sources" in args for args in build)
    copies = [args.split()[:-1] for keyword, args in instructions if keyword == "COPY"]
    assert any("setup.py" in sources for sources in copies)
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "**/*.so" in ignored  # a checkout's own compiled modules stay out of the context


def test_the_image_runs_the_worker_on_jemalloc_as_the_memory_benchmark_measures_it() -> None:
    """The allocator settings of the image are the ones ``never_read_streams.py --variants
    image`` measures (docs/operations.md, "Memory"); tests/server/test_memory_trim.py runs a
    Python under them."""
    env = dockerfile_env()
    assert env["LD_PRELOAD"] == "libjemalloc.so.2" and env["PYTHONMALLOC"] == "malloc"
    runs = [args for keyword, args in dockerfile_instructions() if keyword == "RUN"]
    assert any("libjemalloc2" in args for args in runs)
    bench = load_script(ROOT / "benchmarks" / "never_read_streams.py")
    assert bench.VARIANTS["image"] == {k: env[k] for k in ("LD_PRELOAD", "PYTHONMALLOC", "MALLOC_CONF")}


def test_dockerfile_copies_exist_and_are_in_the_build_context() -> None:
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for required in (".git", ".venv", "**/node_modules", "tests/rest/browser/node_modules"):
        assert required in ignored
    sources = []
    for keyword, args in dockerfile_instructions():
        if keyword == "COPY" and "--from=" not in args:
            sources += args.split()[:-1]
    assert "pyproject.toml" in sources
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        for pattern in ignored:
            assert not fnmatch.fnmatch(source, pattern.removeprefix("**/")), f"{source} ignored by {pattern}"


def test_compose_runs_two_workers_on_one_redis() -> None:
    services = compose()["services"]
    assert str(services["redis"]["image"]).startswith("redis:")
    workers = compose_workers()
    assert len(workers) == 2
    urls = {compose_env(s)["REDIS_URL"] for s in workers.values()}
    assert urls == {"redis://redis:6379/0"}
    host_ports: list[str] = []
    for service in workers.values():
        assert (COMPOSE.parent / service["build"]["context"]).resolve() == ROOT
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        container_ports = set()
        for mapping in service["ports"]:
            *host, container = str(mapping).split(":")
            host_ports.append(":".join(host))
            container_ports.add(int(container))
        assert container_ports == {DEFAULTS.grpc_port, DEFAULTS.http_port, DEFAULTS.metrics_port}
    assert len(host_ports) == len(set(host_ports)), f"host ports collide: {host_ports}"


# ------------------------------------------------------------------------------ local cluster
CLUSTER_DURATION = 8.0
WORKER_LINE = re.compile(r"^worker (\d+) grpc=(\S+) rest=(\S+) metrics=(\S+) pid=(\d+)")
REDIS_LINE = re.compile(r"^redis url=(\S+) pid=(\d+)")


@dataclass
class ClusterWorker:
    index: int
    grpc_address: str
    rest_url: str
    pid: int


class LineReader:
    """Collects a child's stdout lines on a thread so every wait has a timeout."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._pump, args=(proc,), daemon=True)
        self._thread.start()

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def wait_for(self, predicate: Callable[[str], bool], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out after {timeout}s; output so far:\n{self.text}")
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"local_cluster.py ended early; output:\n{self.text}")
            self.lines.append(line)
            if predicate(line):
                return line

    def rest(self, timeout: float) -> None:
        """Read until the end of the output."""
        self._thread.join(timeout)
        while True:
            try:
                line = self._queue.get_nowait()
            except queue.Empty:
                return
            if line is not None:
                self.lines.append(line)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def process_running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self").exists():
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def child_pids(parent: int) -> set[int] | None:
    """Live children of `parent` (None where /proc is not available)."""
    if not Path("/proc/self").exists():
        return None
    children: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            children.add(int(entry.name))
    return children


def wait_gone(pids: set[int], timeout: float) -> set[int]:
    deadline = time.monotonic() + timeout
    alive = {pid for pid in pids if process_running(pid)}
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = {pid for pid in alive if process_running(pid)}
    return alive


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], LineReader]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_") and k != "REDIS_URL"}
    cmd = [
        sys.executable, str(DEPLOY / "local_cluster.py"),
        "--workers", "2", "--duration", str(CLUSTER_DURATION),
        "--grpc-port", "0", "--http-port", "0", "--metrics-port", "0",
        "--log-dir", str(tmp_path / "logs"), "--start-timeout", "20", "--stop-timeout", "10",
        "--", "--log-level", "warning", "--shutdown-grace", "1",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    reader = LineReader(proc)
    try:
        yield proc, reader
    finally:
        if proc.poll() is None:  # the test failed early: let the script stop its children
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.timeout(60)
def test_local_cluster_workers_share_one_redis(
    cluster: tuple[subprocess.Popen[str], LineReader],
) -> None:
    proc, reader = cluster
    reader.wait_for(lambda line: line.startswith("ready:"), timeout=25)
    redis_match = next(m for m in map(REDIS_LINE.match, reader.lines) if m)
    workers = [
        ClusterWorker(int(m.group(1)), m.group(2), m.group(3), int(m.group(5)))
        for m in map(WORKER_LINE.match, reader.lines)
        if m
    ]
    assert [w.index for w in workers] == [1, 2]
    assert workers[0].grpc_address != workers[1].grpc_address
    started = {int(redis_match.group(2)), *(w.pid for w in workers)}
    children = child_pids(proc.pid)
    if children is not None:
        assert children == started, "the script started processes it does not report"

    # Create on worker 1, read on worker 2 with the seat credential: one shared Redis.
    w1, w2 = workers
    direct = [("grpc.enable_http_proxy", 0)]  # loopback: never through a proxy from the environment
    with (
        grpc.insecure_channel(w1.grpc_address, options=direct) as c1,
        grpc.insecure_channel(w2.grpc_address, options=direct) as c2,
    ):
        created = match_service_pb2_grpc.MatchServiceStub(c1).CreateMatch(
            match_service_pb2.CreateMatchRequest(rules=match_pb2.RuleSet(preset="paulista")), timeout=10
        )
        seat = sorted(created.seat_credentials, key=lambda c: c.seat)[0]
        got = match_service_pb2_grpc.MatchServiceStub(c2).GetMatch(
            match_service_pb2.GetMatchRequest(match_id=created.match.match_id),
            metadata=(("authorization", f"Bearer {seat.token}"),),
            timeout=10,
        )
    assert got.match.match_id == created.match.match_id
    assert got.match.version == created.match.version
    assert got.observation.HasField("seat") and got.observation.seat == seat.seat

    # Same match over worker 2's REST face, and the container healthcheck on worker 2.
    request = urllib.request.Request(
        f"{w2.rest_url}/v1/matches/{created.match.match_id}",
        headers={"Authorization": f"Bearer {seat.token}"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        assert json.load(response)["match"]["matchId"] == created.match.match_id
    health = subprocess.run(
        [sys.executable, str(DEPLOY / "grpc_health_check.py"), w2.grpc_address],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert health.returncode == 0, health.stderr
    assert "SERVING" in health.stdout

    # --duration: the script stops by itself, cleanly, and leaves nothing running.
    assert proc.wait(timeout=CLUSTER_DURATION + 20) == 0
    reader.rest(timeout=5)
    assert "cluster stopped" in reader.text
    assert not [line for line in reader.lines if line.startswith("error")], reader.text
    assert not wait_gone(started, timeout=5), f"left running: {started}\n{reader.text}"


REDIS_PROCESS_LINE = re.compile(
    r"^redis (node \d+ (?:primary|replica)|server \d+ (?:primary|replica)|sentinel \d+) "
    r"127\.0\.0\.1:\d+ pid=(\d+)$"
)


def play_across(workers: list[ClusterWorker], actions: int) -> tuple[int, list[int]]:
    """Create a match on the first worker; act `actions` times, each action through the
    next worker in turn, while a seat's stream is open on the last worker. Returns the final
    version and the versions that stream delivered."""
    direct = [("grpc.enable_http_proxy", 0)]
    channels = [grpc.insecure_channel(w.grpc_address, options=direct) for w in workers]
    try:
        stubs = [match_service_pb2_grpc.MatchServiceStub(c) for c in channels]
        created = stubs[0].CreateMatch(
            match_service_pb2.CreateMatchRequest(rules=match_pb2.RuleSet(preset="paulista")), timeout=10
        )
        mid = created.match.match_id
        tokens = [c.token for c in sorted(created.seat_credentials, key=lambda c: c.seat)]
        stream = stubs[-1].StreamObservations(
            match_service_pb2.StreamObservationsRequest(match_id=mid, from_version=created.match.version),
            metadata=(("authorization", f"Bearer {tokens[0]}"),),
            timeout=60,
        )
        version = created.match.version
        for n in range(actions):
            stub = stubs[n % len(stubs)]
            view = stub.GetMatch(
                match_service_pb2.GetMatchRequest(match_id=mid),
                metadata=(("authorization", f"Bearer {tokens[0]}"),),
                timeout=10,
            )
            seat = view.observation.awaited[0]
            mine = stub.GetMatch(
                match_service_pb2.GetMatchRequest(match_id=mid),
                metadata=(("authorization", f"Bearer {tokens[seat]}"),),
                timeout=10,
            )
            done = stub.SubmitAction(
                match_service_pb2.SubmitActionRequest(
                    match_id=mid,
                    request_id=f"a{n}",
                    expected_version=mine.observation.version,
                    action=mine.observation.legal_actions[0],
                ),
                metadata=(("authorization", f"Bearer {tokens[seat]}"),),
                timeout=10,
            )
            version = done.version
        seen: list[int] = []
        for msg in stream:
            if msg.HasField("update"):
                seen += [e.version for e in msg.update.events]
                if msg.update.version >= version:
                    break
        stream.cancel()
        return version, seen
    finally:
        for c in channels:
            c.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("flag", "scheme", "processes"),
    [("--redis-cluster", "redis+cluster", 6), ("--redis-sentinel", "redis+sentinel", 5)],
)
def test_local_cluster_runs_its_workers_on_a_redis_cluster_or_sentinel_group(
    tmp_path: Path, flag: str, scheme: str, processes: int
) -> None:
    """`--redis-cluster` / `--redis-sentinel` start the Redis side, then the workers with its
    URL, and the workers serve one match together: created on worker 1, acted on through
    both, streamed from worker 2 with every version once. Then the script stops everything
    by itself (`--duration`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRUCO_") and k != "REDIS_URL"}
    cmd = [
        sys.executable, str(DEPLOY / "local_cluster.py"), flag,
        "--workers", "2", "--duration", "8", "--grpc-port", "0", "--http-port", "0", "--metrics-port", "0",
        "--log-dir", str(tmp_path / "logs"), "--start-timeout", "30", "--stop-timeout", "10",
        "--", "--log-level", "warning", "--shutdown-grace", "1",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    reader = LineReader(proc)
    try:
        reader.wait_for(lambda line: line.startswith("ready:"), timeout=60)
        started = [m for m in map(REDIS_PROCESS_LINE.match, reader.lines) if m]
        assert len(started) == processes, reader.text
        pids = {int(m.group(2)) for m in started}
        ready = next(line for line in reader.lines if line.startswith("redis ready at "))
        assert ready.removeprefix("redis ready at ").startswith(f"{scheme}://127.0.0.1:"), ready
        workers = [
            ClusterWorker(int(m.group(1)), m.group(2), m.group(3), int(m.group(5)))
            for m in map(WORKER_LINE.match, reader.lines)
            if m
        ]
        assert [w.index for w in workers] == [1, 2]
        pids |= {w.pid for w in workers}
        version, seen = play_across(workers, 8)
        assert version > 8 and seen and seen == list(range(seen[0], version + 1))
        assert proc.wait(timeout=60) == 0
        reader.rest(timeout=5)
        assert reader.lines[-1] == "cluster stopped"
        assert not [line for line in reader.lines if line.startswith("error")], reader.text
        assert not wait_gone(pids, timeout=5), f"left running: {pids}\n{reader.text}"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        if proc.stdout is not None:
            proc.stdout.close()

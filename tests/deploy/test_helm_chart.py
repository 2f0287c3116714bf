"""The chart's values against ``helm/truco/values.schema.json``, and the rendered chart
against the Kubernetes schemas.

- Schema tests (always run, ``jsonschema``): the schema is valid draft-07, describes every
  value of ``values.yaml``, accepts ``values.yaml`` and every example in
  ``helm/truco/examples/`` (merged over ``values.yaml``, as Helm merges them), and refuses
  the mistakes it exists to catch (a URL with credentials, an unknown key, a bad port...).
- Render tests (need the ``helm`` binary on PATH): ``helm lint --strict`` and ``helm
  template`` for the defaults and every example, every manifest validated with
  ``kubernetes-validate`` (strict) for the oldest and newest Kubernetes it ships schemas
  for, and Helm itself refusing values the schema refuses. Without ``helm`` this test is
  SKIPPED with that reason: no package this project can install provides a helm binary
  (docs/deploy.md, "Checking the chart", has the same check for a machine with helm).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from truco_server.core.redis_url import parse_redis_url
from truco_tools.redis_cluster import CLUSTER_SCHEME, SENTINEL_SCHEME

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "truco"
SCHEMA_PATH = CHART / "values.schema.json"
EXAMPLES = sorted((CHART / "examples").glob("*.yaml"))
#: Kinds the chart may render that are custom resources (no schema in kubernetes-validate).
CUSTOM_KINDS = {"ServiceMonitor": "monitoring.coreos.com/v1"}


def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def schema() -> dict[str, Any]:
    data = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def defaults() -> dict[str, Any]:
    data = load_yaml(CHART / "values.yaml")
    assert isinstance(data, dict)
    return data


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Helm's merge of user values over the chart's: maps merge, anything else replaces,
    null removes the key."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def with_value(dotted: str, value: Any) -> dict[str, Any]:
    """values.yaml with one value replaced (`a.b.c`), like `--set a.b.c=...`."""
    override: dict[str, Any] = {}
    node = override
    *parents, last = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return merged(defaults(), override)


def errors(values: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(schema())
    return [
        f"{'.'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in validator.iter_errors(values)
    ]


def resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    assert ref.startswith("#/definitions/"), ref
    target = schema()["definitions"][ref.removeprefix("#/definitions/")]
    return resolve({**target, **{k: v for k, v in node.items() if k != "$ref"}})


def walk(values: Any, node: dict[str, Any], path: str) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """(path, value, schema node) of every value of values.yaml, down to the leaves or to a
    free-form object (a map with `additionalProperties` schema, or an object schema
    without `properties`)."""
    node = resolve(node)
    yield path, values, node
    if isinstance(values, dict) and "properties" in node:
        for key, value in values.items():
            child = node["properties"].get(key)
            assert child is not None, f"{path}.{key}: not described in values.schema.json"
            yield from walk(value, child, f"{path}.{key}".lstrip("."))


# ------------------------------------------------------------------------------ schema
def test_schema_is_valid_draft7() -> None:
    jsonschema.Draft7Validator.check_schema(schema())
    assert schema()["$schema"] == "http://json-schema.org/draft-07/schema#"


def test_values_yaml_matches_the_schema() -> None:
    assert errors(defaults()) == []


def test_schema_describes_every_value_of_values_yaml() -> None:
    seen = 0
    for path, value, node in walk(defaults(), schema(), ""):
        if not path:
            continue
        seen += 1
        assert node.get("description") or node.get("$ref"), f"{path}: no description in the schema"
        assert "type" in node or "enum" in node, f"{path}: no type in the schema"
        if isinstance(value, dict) and node.get("additionalProperties") is False:
            listed = set(node.get("properties", {}))
            assert listed == set(value), f"{path}: schema lists {sorted(listed ^ set(value))} differently"
    top = set(schema()["properties"]) - {"global"}
    assert top == set(defaults()), f"top-level keys differ: {sorted(top ^ set(defaults()))}"
    assert seen > 60, "the walk did not reach the leaves"


def test_examples_cover_standalone_cluster_and_sentinel() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {"standalone", "cluster", "sentinel"} <= names
    by_name = {p.stem: load_yaml(p) for p in EXAMPLES}
    assert by_name["standalone"]["redis"]["url"].startswith("redis://")
    assert by_name["cluster"]["redis"]["url"].startswith(f"{CLUSTER_SCHEME}://")
    assert by_name["sentinel"]["redis"]["existingSecret"], "the sentinel example keeps its URL in a Secret"
    assert f"{SENTINEL_SCHEME}://" in (CHART / "examples" / "sentinel.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_values_match_the_schema(path: Path) -> None:
    example = load_yaml(path)
    assert isinstance(example, dict) and example
    assert errors(merged(defaults(), example)) == []
    redis = merged(defaults(), example)["redis"]
    assert bool(redis["url"]) != bool(redis["existingSecret"]), "exactly one of redis.url and existingSecret"
    assert merged(defaults(), example)["apiKeys"]["existingSecret"], "examples use an API key Secret"


@pytest.mark.parametrize(
    "url",
    [
        "redis://redis:6379/0",
        "redis://redis-master.redis.svc.cluster.local:6379/0",
        "redis://10.0.0.7",
        "rediss://redis.example:6380/0",
        "redis://[::1]:6379/0",
        "unix:///var/run/redis/redis.sock",
        f"{CLUSTER_SCHEME}://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002",
        f"{CLUSTER_SCHEME}://redis-cluster-0.redis:6379",
        f"{SENTINEL_SCHEME}://127.0.0.1:26379,127.0.0.1:26380,127.0.0.1:26381/truco",
        f"{SENTINEL_SCHEME}://sentinel.redis:26379/mymaster",
        "rediss+cluster://r1:6379,r2:6379?ssl_ca_certs=/etc/redis/ca.pem",
        f"{SENTINEL_SCHEME}://s1:26379,s2:26379/mymaster?db=2&socket_timeout=3",
    ],
)
def test_schema_accepts_every_redis_url_form(url: str) -> None:
    assert errors(with_value("redis.url", url)) == []
    parse_redis_url(url)  # and the worker takes it


@pytest.mark.parametrize(
    ("dotted", "value", "where"),
    [
        ("redis.url", "redis://:secret@redis:6379/0", "redis.url"),  # credentials: use a Secret
        ("redis.url", "redis://user:secret@redis:6379/0", "redis.url"),
        ("redis.url", f"{CLUSTER_SCHEME}://:secret@r1:6379,r2:6379", "redis.url"),
        ("redis.url", "http://redis:6379", "redis.url"),
        ("redis.url", f"{CLUSTER_SCHEME}://r1:6379,r2", "redis.url"),  # a seed without a port
        ("redis.url", f"{SENTINEL_SCHEME}://s1:26379", "redis.url"),  # no master name
        ("redis.url", f"{SENTINEL_SCHEME}://s1:26379/m?sentinel_password=x", "redis.url"),  # a secret
        ("redis.existingSecret", "Not_A_Name", "redis.existingSecret"),
        ("replicaCount", "3", "replicaCount"),
        ("replicaCount", -1, "replicaCount"),
        ("logLevel", "verbose", "logLevel"),
        ("service.ports.grpc", 70000, "service.ports.grpc"),
        ("image.pullPolicy", "Sometimes", "image.pullPolicy"),
        ("image.digest", "latest", "image.digest"),
        ("metrics.serviceMonitor.interval", "30 seconds", "metrics.serviceMonitor.interval"),
        ("extraEnv", [{"value": "1"}], "extraEnv.0"),
        ("extraEnv", [{"name": "TRUCO_X", "value": 1}], "extraEnv.0.value"),
        ("probes.readiness.periodSeconds", 0, "probes.readiness.periodSeconds"),
        ("replicas", 3, "(top)"),  # a typo of replicaCount
        ("redis.password", "x", "redis"),
    ],
)
def test_schema_refuses_bad_values(dotted: str, value: Any, where: str) -> None:
    found = errors(with_value(dotted, value))
    assert found, f"{dotted}={value!r} was accepted"
    assert any(e.startswith(f"{where}:") for e in found), found


# ------------------------------------------------------------------------------ render
@pytest.fixture(scope="module")
def helm() -> str:
    path = shutil.which("helm")
    if path is None:
        pytest.skip(
            "helm is not on PATH, so the chart was NOT rendered or validated against the Kubernetes "
            "schemas here (no installable package provides helm); run this test where helm exists "
            "(docs/deploy.md, 'Checking the chart')"
        )
    return path


RENDER_CASES: list[tuple[str, list[str]]] = [
    ("defaults", ["--set", "redis.url=redis://redis:6379/0", "--set", "apiKeys.allowOpenAccess=true"]),
    *[(p.stem, ["-f", str(p)]) for p in EXAMPLES],
]


def run_helm(helm: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([helm, *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def render(helm: str, args: list[str]) -> list[dict[str, Any]]:
    done = run_helm(helm, "template", "truco-test", str(CHART), "--namespace", "truco", *args)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def oldest_and_newest_kubernetes() -> list[str]:
    versions = kubernetes_validate.utils.all_versions()
    return [kubernetes_validate.utils.major_minor(v) for v in (versions[0], versions[-1])]


@pytest.mark.parametrize(("case", "args"), RENDER_CASES, ids=[c for c, _ in RENDER_CASES])
def test_chart_lints_and_renders_manifests_valid_for_kubernetes(
    helm: str, case: str, args: list[str]
) -> None:
    lint = run_helm(helm, "lint", "--strict", str(CHART), *args)
    assert lint.returncode == 0, lint.stdout + lint.stderr

    manifests = render(helm, args)
    kinds = [m["kind"] for m in manifests]
    assert kinds.count("Deployment") == 1 and kinds.count("Service") == 2, kinds
    for manifest in manifests:
        name = f"{manifest['kind']}/{manifest['metadata']['name']}"
        if manifest["kind"] in CUSTOM_KINDS:
            assert manifest["apiVersion"] == CUSTOM_KINDS[manifest["kind"]], name
            continue
        for version in oldest_and_newest_kubernetes():
            try:
                kubernetes_validate.validate(manifest, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                path = ".".join(map(str, exc.path))
                raise AssertionError(
                    f"{case}: {name} invalid for Kubernetes {version} at {path}: {exc.message}"
                ) from None

    deployment = next(m for m in manifests if m["kind"] == "Deployment")
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    values = (
        merged(defaults(), load_yaml(CHART / "examples" / f"{case}.yaml")) if case != "defaults" else None
    )
    if values is not None and values["redis"]["existingSecret"]:
        ref = env["REDIS_URL"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": values["redis"]["existingSecret"], "key": values["redis"]["existingSecretKey"]}
    elif values is not None:
        assert env["REDIS_URL"]["value"] == values["redis"]["url"]

    # Helm itself checks values.schema.json: the same values with credentials in redis.url fail.
    refused = run_helm(
        helm, "template", "truco-test", str(CHART), *args, "--set", "redis.url=redis://:secret@redis:6379/0"
    )
    assert refused.returncode != 0
    assert "/redis/url'" in refused.stderr or "redis.url: Does not match" in refused.stderr, refused.stderr

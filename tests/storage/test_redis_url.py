"""The Redis URL forms: parsed in one place (storage.redis_url), checked by the worker's
configuration with messages that name the problem and never quote a password."""

from __future__ import annotations

import re

import pytest

from truco_server.core.config import ConfigError, parse_settings, redact_url
from truco_server.core.redis_url import parse_redis_url


def test_standalone_urls_are_handed_to_redis_py_as_they_are() -> None:
    for url in ("redis://h:6379/0", "rediss://:pw@h:6380/2", "unix:///run/redis.sock"):
        target = parse_redis_url(url)
        assert (target.kind, target.url, target.nodes) == ("standalone", url, ())
    assert parse_redis_url("rediss://h").tls


def test_cluster_url_lists_seed_nodes_with_credentials_and_options() -> None:
    t = parse_redis_url("rediss+cluster://app:s%40cret@a.example:7000,[::1]:7001,b?socket_timeout=2.5")
    assert t.kind == "cluster" and t.tls
    assert t.nodes == (("a.example", 7000), ("::1", 7001), ("b", 6379))
    assert (t.username, t.password) == ("app", "s@cret")
    kwargs = t.connection_kwargs()
    assert kwargs["ssl"] is True and kwargs["socket_timeout"] == 2.5 and kwargs["password"] == "s@cret"
    assert "db" not in kwargs
    assert parse_redis_url("redis+cluster://a:1/0").nodes == (("a", 1),)


def test_sentinel_url_names_the_master_and_may_authenticate_to_the_sentinels() -> None:
    t = parse_redis_url(
        "redis+sentinel://:pw@s1:26379,s2/truco?db=3&sentinel_password=spw&socket_connect_timeout=1"
    )
    assert t.kind == "sentinel" and not t.tls
    assert t.nodes == (("s1", 26379), ("s2", 26379)) and t.master_name == "truco"
    assert t.connection_kwargs()["db"] == 3 and t.connection_kwargs()["password"] == "pw"
    assert t.sentinel_kwargs()["password"] == "spw" and "db" not in t.sentinel_kwargs()
    tls = parse_redis_url("rediss+sentinel://s:1/m?ssl_ca_certs=/ca.pem&ssl_cert_reqs=optional")
    assert tls.connection_kwargs()["ssl_ca_certs"] == "/ca.pem"
    assert tls.sentinel_kwargs()["ssl"] is True  # TLS to the sentinels as well


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis+cluster://", "at least one HOST:PORT"),
        ("redis+cluster://a:1/3", "database 0 only"),
        ("redis+cluster://a:99999", "1..65535"),
        ("redis+cluster://a:1,a:1", "listed twice"),
        ("redis+cluster://::1:7000", "brackets"),
        ("redis+cluster://a:1?db=2", "unknown option 'db'"),
        ("redis+cluster://a:1?ssl_ca_certs=/x", "rediss+cluster://"),
        ("redis+cluster://user@a:1", "without a password"),
        ("redis+sentinel://s:1", "master name"),
        ("redis+sentinel://s:1/m/2", "?db=N"),
        ("redis+sentinel://s:1/m?db=x", "database number"),
        ("rediss+sentinel://s:1/m?ssl_cert_reqs=maybe", "required, optional or none"),
        ("redis+sentinel://s:1/m?socket_timeout=0", "positive number"),
        ("redis+sentinel://s:1/m?db=1&db=2", "given twice"),
        ("memcached://x", "unknown scheme"),
        ("redis://", "needs a host"),
    ],
)
def test_malformed_urls_are_refused_with_the_reason(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_redis_url(url)


def test_the_worker_refuses_a_bad_url_naming_the_setting_never_the_password() -> None:
    with pytest.raises(ConfigError, match=r"REDIS_URL.*master name") as info:
        parse_settings([], {"REDIS_URL": "redis+sentinel://:hunter2@s:26379"})
    assert "hunter2" not in str(info.value)
    with pytest.raises(ConfigError, match="sentinel_password: expected a non-empty value"):
        parse_settings([], {"REDIS_URL": "redis+sentinel://s:1/m?sentinel_password="})
    settings = parse_settings(["--redis", "redis+cluster://:pw@a:1,b:2"], {})
    assert settings.redis_url == "redis+cluster://:pw@a:1,b:2"
    assert settings.store_description == "redis+cluster://:***@a:1,b:2"


def test_redaction_hides_every_password() -> None:
    assert redact_url("rediss+sentinel://u:p@[::1]:1,b:2/m?sentinel_password=zz&db=1") == (
        "rediss+sentinel://u:***@[::1]:1,b:2/m?sentinel_password=***&db=1"
    )
    assert redact_url("redis://secret@h:1/0") == "redis://***@h:1/0"
    assert redact_url("redis+cluster://a:1,b:2") == "redis+cluster://a:1,b:2"


def test_the_wait_and_retry_settings_are_validated() -> None:
    s = parse_settings(["--redis-wait-replicas", "1", "--redis-wait-timeout", "250"], {})
    assert (s.redis_wait_replicas, s.redis_wait_timeout_ms, s.redis_retry_seconds) == (1, 250, 10.0)
    with pytest.raises(ConfigError, match="TRUCO_REDIS_WAIT_REPLICAS"):
        parse_settings([], {"TRUCO_REDIS_WAIT_REPLICAS": "-1"})
    with pytest.raises(ConfigError, match="TRUCO_REDIS_RETRY_SECONDS"):
        parse_settings([], {"TRUCO_REDIS_RETRY_SECONDS": "0"})

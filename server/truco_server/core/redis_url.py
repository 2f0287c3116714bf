"""The Redis URL forms the store is selected by, parsed and checked in one place.

``REDIS_URL`` names the kind of Redis as well as where it is:

* ``redis://``, ``rediss://`` (TLS), ``unix://`` -- one Redis server (or one primary behind
  a stable address); parsed by redis-py itself (``Redis.from_url``), as it always was;
* ``redis+cluster://`` (``rediss+cluster://`` for TLS) -- Redis Cluster, given by one or
  more seed nodes: ``redis+cluster://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...][?OPTIONS]``;
* ``redis+sentinel://`` (``rediss+sentinel://``) -- a primary watched by Redis Sentinel,
  given by the sentinels and the master name:
  ``redis+sentinel://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...]/MASTER_NAME[?OPTIONS]``.

The credentials in the user-info part are those of the data nodes (the cluster's nodes; the
sentinel group's primary and replicas). Options (query string) of the two new forms:

==========================  =====================================================
``socket_timeout``          seconds a command may wait for its reply (default 5)
``socket_connect_timeout``  seconds a connection may take to open (default 5)
``db``                      sentinel only: the database number (default 0); a cluster
                            has database 0 only
``sentinel_username``,      sentinel only: credentials of the sentinels themselves
``sentinel_password``       (default: none)
``ssl_ca_certs``            TLS only: CA bundle that signs the servers' certificates
``ssl_certfile``,           TLS only: a client certificate and its key (mutual TLS)
``ssl_keyfile``
``ssl_cert_reqs``           TLS only: ``required`` (default), ``optional`` or ``none``
``ssl_check_hostname``      TLS only: ``true`` (default) or ``false``
==========================  =====================================================

With a ``rediss+`` scheme every connection uses TLS: to the cluster's nodes, and to the
sentinels as well as to the primary. :func:`parse_redis_url` raises ``ValueError`` with a
message that names what is wrong and never contains the password. See
``docs/operations.md`` ("Redis URLs").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal
from urllib.parse import parse_qsl, unquote

__all__ = [
    "CLUSTER_SCHEMES",
    "SENTINEL_SCHEMES",
    "STANDALONE_SCHEMES",
    "RedisTarget",
    "parse_redis_url",
]

STANDALONE_SCHEMES = ("redis", "rediss", "unix")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
DEFAULT_PORT = {"cluster": 6379, "sentinel": 26379}

Kind = Literal["standalone", "cluster", "sentinel"]


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not value > 0 or value == float("inf"):
        raise ValueError("a positive number of seconds")
    return value


def _db(text: str) -> int:
    if not text.isdigit():
        raise ValueError("a database number (0, 1, ...)")
    return int(text)


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "yes", "1"):
        return True
    if lowered in ("false", "no", "0"):
        return False
    raise ValueError("true or false")


def _cert_reqs(text: str) -> str:
    if text not in ("required", "optional", "none"):
        raise ValueError("required, optional or none")
    return text


def _text(text: str) -> str:
    if not text:
        raise ValueError("a non-empty value")
    return text


_COMMON: Mapping[str, Callable[[str], Any]] = {
    "socket_timeout": _positive_seconds,
    "socket_connect_timeout": _positive_seconds,
}
_SENTINEL_ONLY: Mapping[str, Callable[[str], Any]] = {
    "db": _db,
    "sentinel_username": _text,
    "sentinel_password": _text,
}
_TLS_ONLY: Mapping[str, Callable[[str], Any]] = {
    "ssl_ca_certs": _text,
    "ssl_certfile": _text,
    "ssl_keyfile": _text,
    "ssl_cert_reqs": _cert_reqs,
    "ssl_check_hostname": _bool,
}
_SECRET_OPTIONS = frozenset({"sentinel_password"})


@dataclass(frozen=True)
class RedisTarget:
    """A parsed Redis URL: what kind of Redis, where, and how to connect to it."""

    kind: Kind
    url: str = field(repr=False)
    """The URL as given (standalone URLs are handed to redis-py as they are)."""
    nodes: tuple[tuple[str, int], ...] = ()
    """Cluster seed nodes, or the sentinels (empty for a standalone URL)."""
    master_name: str | None = None
    """Sentinel: the name the sentinels monitor the primary by."""
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    """Parsed query options (see the module docstring)."""

    @property
    def db(self) -> int:
        return int(self.options.get("db", 0))

    def connection_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of redis-py's clients for the data nodes' connections."""
        kwargs: dict[str, Any] = {
            "username": self.username,
            "password": self.password,
            "socket_timeout": self.options.get("socket_timeout", 5.0),
            "socket_connect_timeout": self.options.get("socket_connect_timeout", 5.0),
        }
        if self.kind == "sentinel":
            kwargs["db"] = self.db
        if self.tls:
            kwargs["ssl"] = True
            for name in _TLS_ONLY:
                if name in self.options:
                    kwargs[name] = self.options[name]
        return kwargs

    def sentinel_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the connections to the sentinels themselves."""
        kwargs = {
            k: v for k, v in self.connection_kwargs().items() if k not in ("username", "password", "db")
        }
        kwargs["username"] = self.options.get("sentinel_username")
        kwargs["password"] = self.options.get("sentinel_password")
        return kwargs


def _split_host_port(item: str, default_port: int) -> tuple[str, int]:
    if item.startswith("["):  # [IPv6]:port
        host, sep, rest = item[1:].partition("]")
        if not sep or not host:
            raise ValueError(f"malformed address {item!r}")
        port_text = rest.removeprefix(":") if rest.startswith(":") else rest
        if rest and not rest.startswith(":"):
            raise ValueError(f"malformed address {item!r}")
    else:
        host, sep, port_text = item.rpartition(":")
        if not sep:
            host, port_text = item, ""
        if ":" in host:
            raise ValueError(f"an IPv6 address must be in brackets: {item!r}")
    if not host:
        raise ValueError(f"address without a host: {item!r}")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise ValueError(f"port of {host!r} must be 1..65535")
    return host, int(port_text)


def parse_redis_url(url: str) -> RedisTarget:
    """Parse and check a Redis URL of any supported form (see the module docstring).

    Raises ``ValueError`` naming the problem (never quoting a password)."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise ValueError("expected SCHEME://...: " + _expected())
    if scheme in STANDALONE_SCHEMES:
        if scheme != "unix" and not rest.split("/", 1)[0].rpartition("@")[2]:
            raise ValueError(f"{scheme}:// needs a host")
        return RedisTarget(kind="standalone", url=url, tls=scheme == "rediss")
    if scheme in CLUSTER_SCHEMES:
        kind: Kind = "cluster"
    elif scheme in SENTINEL_SCHEMES:
        kind = "sentinel"
    else:
        raise ValueError("unknown scheme: " + _expected())
    rest, _, query = rest.partition("?")
    if "#" in rest or "#" in query:
        raise ValueError("a Redis URL has no #fragment")
    authority, slash, path = rest.partition("/")
    userinfo, at, hosts = authority.rpartition("@")
    if not at:
        hosts = authority
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        if not colon:
            raise ValueError("user-info without a password: write :PASSWORD@ or USER:PASSWORD@")
        username = unquote(user) or None
        password = unquote(secret)
    if not hosts:
        raise ValueError(f"{scheme}:// needs at least one HOST:PORT")
    nodes = tuple(_split_host_port(item, DEFAULT_PORT[kind]) for item in hosts.split(","))
    if len(set(nodes)) != len(nodes):
        raise ValueError("an address is listed twice")
    master_name: str | None = None
    if kind == "cluster":
        if path not in ("", "0"):
            raise ValueError("a Redis Cluster has database 0 only: drop the /path")
    else:
        name = unquote(path)
        if not slash or not name:
            raise ValueError(f"{scheme}:// needs the master name: {scheme}://HOST:PORT[,...]/MASTER_NAME")
        if "/" in name:
            raise ValueError("the path is the master name alone (the database is ?db=N)")
        master_name = name
    tls = scheme.startswith("rediss")
    allowed: dict[str, Callable[[str], Any]] = dict(_COMMON)
    if kind == "sentinel":
        allowed.update(_SENTINEL_ONLY)
    options: dict[str, Any] = {}
    for name, value in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
        if name in _TLS_ONLY and not tls:
            raise ValueError(f"option {name} needs TLS: use the rediss+{kind}:// scheme")
        parse = allowed.get(name) or (_TLS_ONLY.get(name) if tls else None)
        if parse is None:
            known = sorted([*allowed, *(_TLS_ONLY if tls else ())])
            raise ValueError(f"unknown option {name!r} for {scheme}:// (known: {', '.join(known)})")
        if name in options:
            raise ValueError(f"option {name} is given twice")
        try:
            options[name] = parse(value)
        except ValueError as exc:
            shown = "" if name in _SECRET_OPTIONS else f" {value!r}:"
            raise ValueError(f"option {name}:{shown} expected {exc}") from None
    return RedisTarget(
        kind=kind,
        url=url,
        nodes=nodes,
        master_name=master_name,
        username=username,
        password=password,
        tls=tls,
        options=MappingProxyType(options),
    )


def _expected() -> str:
    return (
        "redis://, rediss://, unix://, redis+cluster://HOST:PORT[,...] (rediss+cluster:// for TLS) "
        "or redis+sentinel://HOST:PORT[,...]/MASTER_NAME (rediss+sentinel:// for TLS)"
    )

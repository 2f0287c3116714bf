"""The values of the worker's settings: API keys, and the parser of every option's text
(:mod:`truco_server.core.config` declares the options)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


class ConfigError(ValueError):
    """An option has an invalid value; the message names the flag and variable."""


@dataclass(frozen=True)
class ApiKey:
    """An operator API key. `name` identifies the operator in logs and as match creator."""

    name: str
    secret: str = field(repr=False)

    @property
    def fingerprint(self) -> str:
        """Short, non-reversible id of the secret (safe to log and store)."""
        return hashlib.sha256(self.secret.encode()).hexdigest()[:12]


def find_api_key(keys: Iterable[ApiKey], secret: str) -> ApiKey | None:
    """The key with this secret, if any (every key compared, in constant time per key)."""
    import hmac

    found: ApiKey | None = None
    for key in keys:
        if hmac.compare_digest(key.secret.encode(), secret.encode()):
            found = key
    return found


_SECRET_QUERY = re.compile(r"((?:^|&)[a-z_]*password=)[^&]*")


def redact_url(url: str) -> str:
    """Replace the password (and a lone username-as-password) in a URL with '***', and the
    value of any `...password=` option (e.g. `sentinel_password`)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    rest, qmark, query = rest.partition("?")
    query, hmark, fragment = query.partition("#")
    authority, slash, path = rest.partition("/")
    userinfo, at, hosts = authority.rpartition("@")
    if at:
        user, colon, _secret = userinfo.partition(":")
        authority = f"{user}:***@{hosts}" if colon else f"***@{hosts}"
    if query:
        query = _SECRET_QUERY.sub(r"\1***", query)
    return f"{scheme}{sep}{authority}{slash}{path}{qmark}{query}{hmark}{fragment}"


def parse_api_keys(text: str) -> tuple[ApiKey, ...]:
    """Parse `TRUCO_API_KEYS`: comma-separated `name=secret` or bare `secret` entries (newlines
    separate entries too, and `#` starts a comment to the end of its line, for the keys file).

    A bare secret is named `key-<fingerprint>`. Whitespace around entries is ignored. One
    operator name may have several keys (a rotation's old and new); a secret may appear once.
    """
    keys: list[ApiKey] = []
    lines = (line.partition("#")[0] for line in text.splitlines())
    for raw in ",".join(lines).split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, sep, secret = entry.partition("=")
        if not sep:
            name, secret = "", entry
        name, secret = name.strip(), secret.strip()
        if not secret:
            raise ConfigError(f"TRUCO_API_KEYS: entry {name!r} has an empty secret")
        key = ApiKey(name=name, secret=secret)
        if not name:
            key = ApiKey(name=f"key-{key.fingerprint}", secret=secret)
        keys.append(key)
    secrets = [k.secret for k in keys]
    if len(set(secrets)) != len(secrets):
        raise ConfigError("TRUCO_API_KEYS: the same secret is given twice")
    return tuple(keys)


def read_api_keys_file(path: str) -> tuple[ApiKey, ...]:
    """The keys of a `TRUCO_API_KEYS_FILE` (raises OSError or ConfigError; the message never
    quotes a secret)."""
    with open(path, encoding="utf-8") as f:
        text = f.read(1 << 20)
    return parse_api_keys(text)


def _path(text: str) -> str | None:
    value = text.strip()
    return value or None


def _flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected 1/0, true/false, yes/no or on/off")


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError("a port is 0..65535")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise ValueError("must be >= 0")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise ValueError("must be > 0")
    return value


def _retry_schedule(text: str) -> str:
    steps = [x.strip() for x in text.split(",") if x.strip()]
    if not steps or any(float(x) <= 0 for x in steps):
        raise ValueError("one or more positive numbers of seconds, comma-separated")
    return ",".join(steps)


def _gc_thresholds(text: str) -> str:
    parts = [x.strip() for x in text.split(",")]
    if len(parts) != 3 or not all(x.isdigit() and int(x) > 0 for x in parts):
        raise ValueError("three positive whole numbers, comma-separated (young,middle,full)")
    return ",".join(parts)


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError("must be >= 0")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError("must be > 0")
    return value


def _bot_think_ms(text: str) -> int:
    value = int(text)
    if not 200 <= value <= 60_000:
        raise ValueError("between 200 and 60000 (ms)")
    return value


def _log_level(text: str) -> str:
    value = text.strip().lower()
    if value not in LOG_LEVELS:
        raise ValueError("one of " + ", ".join(LOG_LEVELS))
    return value


def parse_cors_origins(text: str) -> tuple[str, ...]:
    """Parse `TRUCO_CORS_ORIGINS`: `*` or comma-separated `scheme://host[:port]` origins, exactly
    as a browser sends them in `Origin` (no path, no trailing slash); scheme and host are
    lower-cased."""
    origins: list[str] = []
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        if entry != "*":
            scheme, sep, rest = entry.partition("://")
            entry = f"{scheme.lower()}{sep}{rest.lower()}"
            if not re.fullmatch(r"https?://(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?", entry):
                raise ValueError(f"{raw.strip()!r} is not an origin like https://app.example[:port] or *")
        if entry not in origins:
            origins.append(entry)
    return tuple(origins)


def _redis_url(text: str) -> str | None:
    """Check a Redis URL of any form the storage layer accepts (one parser:
    `truco_server.core.redis_url`); the message never quotes the password."""
    from truco_server.core.redis_url import parse_redis_url

    value = text.strip()
    if not value:
        return None
    parse_redis_url(value)
    return value

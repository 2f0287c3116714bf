"""HTTP routes read from the proto's ``google.api.http`` annotations, and request decoding.

Nothing here is written per RPC: every route, path variable, body binding and query
parameter comes from the service descriptor (``match_service_pb2``), and every body goes
through protobuf's JSON mapping. A new RPC with an http rule is served without code changes
(as long as the gRPC servicer implements it).

Binding (as in google/api/http.proto, grpc-gateway and Envoy's transcoder):

- path variables (``{match_id}``; ``{a.b}`` for nested fields) set the named field;
- ``body: "*"`` maps the whole JSON body onto the request message (path variables win);
  ``body: "field"`` maps it onto that field;
- every other field may be given as a query parameter (proto or JSON name, dotted for
  nested fields, repeated by repeating the key) — for rules without ``body: "*"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.api import annotations_pb2, http_pb2  # type: ignore[import-untyped]
from google.protobuf import descriptor, json_format
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from truco_contract import json_mapping
from truco_server.core import errors as E

FD = descriptor.FieldDescriptor

#: Query parameters the transport itself reads (never request fields).
TRANSPORT_QUERY_PARAMS = frozenset({"access_token"})

SSE_UPDATE_EVENT = "update"
SSE_HEARTBEAT_EVENT = "heartbeat"
SSE_ERROR_EVENT = "rpc_error"
"""The SSE event that ends a stream with a ``google.rpc.Status`` (not ``error``: an
``EventSource`` fires ``error`` itself on every dropped connection)."""
SSE_END_EVENT = "end"

_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)(?:=([^}]*))?\}")


class RouteError(ValueError):
    """An http rule this adapter cannot serve (raised at startup, never per request)."""


@dataclass(frozen=True)
class Route:
    """One HTTP binding of one RPC."""

    method_name: str
    """RPC name, e.g. ``GetMatch`` (also the OpenAPI operationId)."""
    http_method: str
    """Upper-case HTTP verb."""
    template: str
    """Path template as written in the proto, e.g. ``/v1/matches/{match_id}:cancel``."""
    path_fields: tuple[str, ...]
    """Field paths bound by path variables, in order."""
    body: str
    """``*``, a field name, or empty (no body)."""
    response_body: str
    """Field of the response serialized as the HTTP body; empty: the whole response."""
    input: descriptor.Descriptor
    output: descriptor.Descriptor
    server_streaming: bool
    service: str = ""
    """The gRPC service's full name (``truco.v1.MatchService``)."""

    @property
    def aiohttp_path(self) -> str:
        """The template in aiohttp's syntax (one path segment per variable, no ``:``)."""
        return _VAR.sub(lambda m: "{" + m.group(1).replace(".", "__") + r":[^/:]+}", self.template)

    @property
    def openapi_path(self) -> str:
        return _VAR.sub(lambda m: "{" + m.group(1) + "}", self.template)

    def request_class(self) -> type[Message]:
        return GetMessageClass(self.input)

    def query_fields(self) -> list[tuple[str, descriptor.FieldDescriptor]]:
        """(dotted proto path, field) of every scalar field a query parameter may set."""
        if self.body == "*":
            return []
        bound = set(self.path_fields)
        if self.body:
            bound.add(self.body)
        out: list[tuple[str, descriptor.FieldDescriptor]] = []

        def walk(desc: descriptor.Descriptor, prefix: str, depth: int) -> None:
            for f in desc.fields:
                path = prefix + f.name
                if path in bound:
                    continue
                if f.type == FD.TYPE_MESSAGE and not _is_scalar_wkt(message_type(f)):
                    if message_type(f).GetOptions().map_entry or _repeated(f) or depth >= 3:
                        continue
                    walk(message_type(f), path + ".", depth + 1)
                else:
                    out.append((path, f))

        walk(self.input, "", 0)
        return out


def _repeated(f: descriptor.FieldDescriptor) -> bool:
    return bool(f.is_repeated)


def message_type(f: descriptor.FieldDescriptor) -> descriptor.Descriptor:
    """The message type of a message field."""
    if f.message_type is None:
        raise RouteError(f"{f.full_name} is not a message field")
    return f.message_type


def enum_type(f: descriptor.FieldDescriptor) -> descriptor.EnumDescriptor:
    """The enum type of an enum field."""
    if f.enum_type is None:
        raise RouteError(f"{f.full_name} is not an enum field")
    return f.enum_type


_SCALAR_WKT = frozenset(
    {
        "google.protobuf.Timestamp",
        "google.protobuf.Duration",
        "google.protobuf.FieldMask",
        "google.protobuf.StringValue",
        "google.protobuf.BytesValue",
        "google.protobuf.BoolValue",
        "google.protobuf.Int32Value",
        "google.protobuf.Int64Value",
        "google.protobuf.UInt32Value",
        "google.protobuf.UInt64Value",
        "google.protobuf.FloatValue",
        "google.protobuf.DoubleValue",
    }
)


def _is_scalar_wkt(desc: descriptor.Descriptor) -> bool:
    return desc.full_name in _SCALAR_WKT


def _field_path(desc: descriptor.Descriptor, path: str) -> list[descriptor.FieldDescriptor]:
    fields: list[descriptor.FieldDescriptor] = []
    current: descriptor.Descriptor | None = desc
    for part in path.split("."):
        if current is None:
            raise RouteError(f"{desc.full_name}: {path!r} goes through a non-message field")
        f = current.fields_by_name.get(part)
        if f is None:
            raise RouteError(f"{desc.full_name} has no field {path!r}")
        fields.append(f)
        current = f.message_type if f.type == FD.TYPE_MESSAGE else None
    return fields


def _route(method: descriptor.MethodDescriptor, rule: Any) -> Route:
    kind = rule.WhichOneof("pattern")
    if kind is None:
        raise RouteError(f"{method.full_name}: http rule without a pattern")
    if kind == "custom":
        verb, template = rule.custom.kind.upper(), rule.custom.path
    else:
        verb, template = kind.upper(), getattr(rule, kind)
    path_fields: list[str] = []
    for m in _VAR.finditer(template):
        if m.group(2) not in (None, "*"):
            raise RouteError(f"{method.full_name}: path pattern {m.group(0)!r} is not supported")
        fields = _field_path(method.input_type, m.group(1))
        if fields[-1].type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP) or _repeated(fields[-1]):
            raise RouteError(f"{method.full_name}: path variable {m.group(1)!r} is not a scalar field")
        path_fields.append(m.group(1))
    if "*" in _VAR.sub("", template):
        raise RouteError(f"{method.full_name}: wildcard segments are not supported in {template!r}")
    if rule.body not in ("", "*"):
        _field_path(method.input_type, rule.body)
    if rule.response_body:
        _field_path(method.output_type, rule.response_body)
    return Route(
        method_name=method.name,
        http_method=verb,
        template=template,
        path_fields=tuple(path_fields),
        body=rule.body,
        response_body=rule.response_body,
        input=method.input_type,
        output=method.output_type,
        server_streaming=bool(method.server_streaming),
        service=method.containing_service.full_name,
    )


def routes_of(service: descriptor.ServiceDescriptor) -> list[Route]:
    """Every HTTP binding (rule and additional_bindings) of every method of ``service``."""
    out: list[Route] = []
    for method in service.methods:
        options = method.GetOptions()
        if not options.HasExtension(annotations_pb2.http):
            continue
        rule: http_pb2.HttpRule = options.Extensions[annotations_pb2.http]
        out.append(_route(method, rule))
        for extra in rule.additional_bindings:
            out.append(_route(method, extra))
    return out


# ------------------------------------------------------------------------------ decoding
def _bad(field: str, message: str) -> E.InvalidArgument:
    return E.InvalidArgument(message, field_violations=[E.FieldViolation(field, message)])


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _set_path(target: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        nested = target.setdefault(part, {})
        if not isinstance(nested, dict):
            raise _bad(path, f"{part!r} must be an object")
        target = nested
    target[parts[-1]] = value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when a name occurs twice (which would silently keep the last)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the name {E.quote(key, 40)} occurs twice in one object")
        out[key] = value
    return out


def _query_value(path: str, f: descriptor.FieldDescriptor, raw: str) -> Any:
    if f.type == FD.TYPE_BOOL:
        lowered = raw.lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise _bad(path, "expected true or false")
    if f.type == FD.TYPE_ENUM and raw.isascii() and re.fullmatch(r"-?[0-9]+", raw):
        return int(raw)
    # a bytes field stays base64 text (URL-safe is common in query strings): the JSON mapping
    # reads either alphabet, and json_mapping.parse_dict refuses what is neither
    return raw


def _query_index(route: Route) -> dict[str, tuple[str, descriptor.FieldDescriptor]]:
    index: dict[str, tuple[str, descriptor.FieldDescriptor]] = {}
    for path, f in route.query_fields():
        index[path] = (path, f)
        fields = _field_path(route.input, path)
        index[".".join(x.json_name for x in fields)] = (path, f)
    return index


def decode_request(
    route: Route,
    path_params: Mapping[str, str],
    query: Sequence[tuple[str, str]],
    body: bytes,
) -> Message:
    """The request message for one HTTP call; malformed input raises ``InvalidArgument``."""
    data: dict[str, Any] = {}
    if route.body:
        parsed = parse_json(body) if body.strip() else {}
        if route.body == "*":
            if not isinstance(parsed, dict):
                raise _bad("body", "the body must be a JSON object")
            data = parsed
        else:
            _set_path(data, route.body, parsed)
    elif body.strip():
        raise _bad("body", f"{route.http_method} {route.template} takes no body")
    index = _query_index(route)
    repeated: dict[str, list[Any]] = {}
    for key, raw in query:
        if key in TRANSPORT_QUERY_PARAMS:
            continue
        found = index.get(key)
        if found is None:
            allowed = sorted({p for p, _ in index.values()})
            hint = f"allowed: {', '.join(allowed)}" if allowed else "this route takes none"
            raise _bad(E.quote(key, 40), f"unknown query parameter {E.quote(key)} ({hint})")
        path, f = found
        value = _query_value(path, f, raw)
        if _repeated(f):
            repeated.setdefault(path, []).append(value)
        else:
            _set_path(data, path, value)
    for path, values in repeated.items():
        _set_path(data, path, values)
    for path in route.path_fields:
        # A path variable may be repeated in the body (either spelling) only with its value.
        fields = _field_path(route.input, path)
        target: Any = data
        for f in fields[:-1]:
            target = target.get(f.name) if isinstance(target.get(f.name), dict) else {}
        value = path_params[path.replace(".", "__")]
        for name in {fields[-1].name, fields[-1].json_name}:
            if name in target and target.pop(name) != value:
                raise _bad(path, f"{name} in the body differs from the path's ({E.quote(value, 40)})")
        _set_path(data, path, value)
    message = route.request_class()()
    fill_message(data, message)
    return message


def parse_json(body: bytes | str, what: str = "body") -> Any:
    """JSON text from a client (a REST body, a WebSocket text frame); not JSON (``NaN`` and
    ``Infinity`` included), an object with a key twice, or nested too deeply, is
    InvalidArgument naming ``what``."""
    try:
        return json.loads(body, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise _bad(what, f"the {what} is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(what, E.clip(f"the {what} is not valid JSON: {exc}", 120)) from None


def fill_message(data: dict[str, Any], message: Message, what: str = "body") -> None:
    """Fill ``message`` from its JSON object (the proto3 JSON mapping, strictly:
    :func:`truco_contract.json_mapping.parse_dict`); what does not fit is InvalidArgument."""
    try:
        json_mapping.parse_dict(data, message)
    except json_mapping.Base64FieldError as exc:
        raise E.InvalidArgument(
            str(exc), field_violations=[E.FieldViolation(exc.path, "not base64 (standard or URL-safe)")]
        ) from None
    except json_mapping.IntegerFieldError as exc:
        raise _bad(exc.path, "an integer in ASCII digits (no fraction, no exponent)") from None
    except json_format.ParseError as exc:
        raise _bad(what, E.clip(str(exc), 200)) from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise _bad(what, E.clip(f"cannot read the request: {exc}", 200)) from None


#: Most digits of a Last-Event-ID (a version number; int64).
VERSION_DIGITS = 18


def last_event_version(header: str) -> int | None:
    """The version a Server-Sent Events ``Last-Event-ID`` header resumes from (``None`` when
    empty); anything but ASCII digits (at most :data:`VERSION_DIGITS`) is InvalidArgument."""
    text = header.strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > VERSION_DIGITS:
        raise E.InvalidArgument(
            "Last-Event-ID must be a version number",
            field_violations=[E.FieldViolation("Last-Event-ID", "not a number")],
        )
    return int(text)


def encode_response(route: Route, message: Message) -> dict[str, Any]:
    """The JSON object for one response message (protobuf JSON mapping, defaults shown)."""
    if route.response_body:
        for part in route.response_body.split("."):
            message = getattr(message, part)
    return message_to_json(message)


def message_to_json(message: Message) -> dict[str, Any]:
    """Protobuf JSON mapping, fields without presence printed with their defaults.

    ``google.protobuf.Struct`` numbers are doubles; whole ones are printed as integers
    (``3``, not ``3.0``), as the other protobuf runtimes do (:func:`json_mapping.message_to_dict`).
    """
    result: dict[str, Any] = json_mapping.message_to_dict(message)
    return result

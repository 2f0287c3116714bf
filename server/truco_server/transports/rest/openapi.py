"""OpenAPI 3 document generated from the proto descriptors.

Paths and operations come from the ``google.api.http`` rules (``routes.routes_of``);
schemas come from the message and enum descriptors, spelled as protobuf's JSON mapping
spells them (lowerCamelCase property names, enums by name, 64-bit integers as strings,
well-known types in their JSON form). The document is built once per process and served
at ``/openapi.json``.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped]

from truco_contract.pb import error_details_pb2 as truco_error_details_pb2
from truco_server.transports.rest.public import is_public
from truco_server.transports.rest.routes import (
    FD,
    SSE_END_EVENT,
    SSE_ERROR_EVENT,
    SSE_HEARTBEAT_EVENT,
    SSE_UPDATE_EVENT,
    Route,
    enum_type,
    message_type,
)

JSON = dict[str, Any]

_INT32 = (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32)
_UINT32 = (FD.TYPE_UINT32, FD.TYPE_FIXED32)
_INT64 = (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64)
_UINT64 = (FD.TYPE_UINT64, FD.TYPE_FIXED64)

_WKT: dict[str, JSON] = {
    "google.protobuf.Timestamp": {"type": "string", "format": "date-time"},
    "google.protobuf.Duration": {
        "type": "string",
        "pattern": r"^-?[0-9]+(\.[0-9]{1,9})?s$",
        "description": "Seconds with up to 9 fractional digits and an 's' suffix, e.g. \"30s\".",
    },
    "google.protobuf.Struct": {"type": "object", "additionalProperties": True},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array", "items": {}},
    "google.protobuf.Empty": {"type": "object", "additionalProperties": False},
    "google.protobuf.FieldMask": {"type": "string"},
    "google.protobuf.Any": {
        "type": "object",
        "properties": {"@type": {"type": "string"}},
        "required": ["@type"],
        "additionalProperties": True,
    },
}
_WRAPPERS = {
    "google.protobuf.StringValue": FD.TYPE_STRING,
    "google.protobuf.BytesValue": FD.TYPE_BYTES,
    "google.protobuf.BoolValue": FD.TYPE_BOOL,
    "google.protobuf.Int32Value": FD.TYPE_INT32,
    "google.protobuf.Int64Value": FD.TYPE_INT64,
    "google.protobuf.UInt32Value": FD.TYPE_UINT32,
    "google.protobuf.UInt64Value": FD.TYPE_UINT64,
    "google.protobuf.FloatValue": FD.TYPE_FLOAT,
    "google.protobuf.DoubleValue": FD.TYPE_DOUBLE,
}

STREAM_CONTENT_TYPES = ("application/x-ndjson", "text/event-stream")


def _scalar(t: int) -> JSON:
    if t in _INT32:
        return {"type": "integer", "format": "int32"}
    if t in _UINT32:
        return {"type": "integer", "format": "int64", "minimum": 0, "maximum": 2**32 - 1}
    if t in _INT64 or t in _UINT64:
        # The JSON mapping prints 64-bit integers as strings (numbers are accepted on input).
        pattern = r"^[0-9]+$" if t in _UINT64 else r"^-?[0-9]+$"
        return {"type": "string", "format": "int64" if t in _INT64 else "uint64", "pattern": pattern}
    if t == FD.TYPE_DOUBLE:
        return {"type": "number", "format": "double"}
    if t == FD.TYPE_FLOAT:
        return {"type": "number", "format": "float"}
    if t == FD.TYPE_BOOL:
        return {"type": "boolean"}
    if t == FD.TYPE_STRING:
        return {"type": "string"}
    if t == FD.TYPE_BYTES:
        return {"type": "string", "format": "byte"}
    raise ValueError(f"not a scalar type: {t}")  # pragma: no cover


class SchemaBuilder:
    """Collects component schemas for messages and enums, by full proto name."""

    def __init__(self) -> None:
        self.schemas: dict[str, JSON] = {}

    @staticmethod
    def ref(full_name: str) -> JSON:
        return {"$ref": f"#/components/schemas/{full_name}"}

    def enum(self, enum: descriptor.EnumDescriptor) -> JSON:
        name = enum.full_name
        if name not in self.schemas:
            self.schemas[name] = {"type": "string", "enum": [v.name for v in enum.values]}
        return self.ref(name)

    def message(self, msg: descriptor.Descriptor, *, exclude: frozenset[str] = frozenset()) -> JSON:
        """A ``$ref`` to the message's schema (built on first use).

        ``exclude`` leaves top-level fields out (path-bound fields of a request body); the
        result is then an inline schema, not a component.
        """
        if msg.full_name in _WKT:
            return dict(_WKT[msg.full_name])
        if msg.full_name in _WRAPPERS:
            return {**_scalar(_WRAPPERS[msg.full_name]), "nullable": True}
        if exclude:
            return self._object(msg, exclude)
        if msg.full_name not in self.schemas:
            self.schemas[msg.full_name] = {}  # placeholder: recursion-safe
            self.schemas[msg.full_name] = self._object(msg, frozenset())
        return self.ref(msg.full_name)

    def _object(self, msg: descriptor.Descriptor, exclude: frozenset[str]) -> JSON:
        props: JSON = {}
        for f in msg.fields:
            if f.name in exclude:
                continue
            props[f.json_name] = self.field(f)
        schema: JSON = {"type": "object", "properties": props, "additionalProperties": False}
        oneofs = [o for o in msg.oneofs if not (len(o.fields) == 1 and o.name.startswith("_"))]
        if oneofs:
            schema["description"] = "; ".join(
                f"at most one of {', '.join(f.json_name for f in o.fields)} (oneof {o.name})" for o in oneofs
            )
        return schema

    def field(self, f: descriptor.FieldDescriptor) -> JSON:
        if f.type == FD.TYPE_MESSAGE and message_type(f).GetOptions().map_entry:
            value = message_type(f).fields_by_name["value"]
            return {"type": "object", "additionalProperties": self._single(value)}
        single = self._single(f)
        if f.is_repeated:
            return {"type": "array", "items": single}
        return single

    def _single(self, f: descriptor.FieldDescriptor) -> JSON:
        if f.type == FD.TYPE_MESSAGE:
            return self.message(message_type(f))
        if f.type == FD.TYPE_ENUM:
            return self.enum(enum_type(f))
        return _scalar(f.type)


def _query_parameter(path: str, f: descriptor.FieldDescriptor, builder: SchemaBuilder) -> JSON:
    schema = builder.field(f)
    param: JSON = {"name": path, "in": "query", "required": False, "schema": schema}
    if f.is_repeated:
        param["style"] = "form"
        param["explode"] = True
    return param


def _error_response(description: str) -> JSON:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/google.rpc.Status"}}},
    }


def _operation(route: Route, builder: SchemaBuilder) -> JSON:
    params = _parameters(route, builder)
    op: JSON = {
        "operationId": route.method_name,
        "tags": [route.service.rpartition(".")[2]],
        "summary": route.method_name,
        "description": (
            f"gRPC method `{route.service}/{route.method_name}` "
            f"({route.input.full_name} → {route.output.full_name})."
        ),
        "security": [] if is_public(route.http_method, route.template) else _OPERATOR_SECURITY,
    }
    if route.body:
        body_desc = route.input
        exclude = frozenset(p.split(".")[0] for p in route.path_fields)
        if route.body == "*":
            schema = builder.message(body_desc, exclude=exclude)
        else:
            schema = builder.field(route.input.fields_by_name[route.body])
        op["requestBody"] = {"required": False, "content": {"application/json": {"schema": schema}}}
    ok_schema = builder.message(route.output)
    if route.server_streaming:
        params += _STREAM_PARAMETERS
        op["security"] = [*op["security"], {"accessTokenQuery": []}]
        op["responses"] = _stream_responses(ok_schema)
    else:
        op["responses"] = {
            "200": {"description": "OK", "content": {"application/json": {"schema": ok_schema}}}
        }
    for code, text in _ERRORS:
        op["responses"][code] = _error_response(text + " (google.rpc.Status with details)")
    op["responses"]["default"] = _error_response("Any other error (google.rpc.Status)")
    if params:
        op["parameters"] = params
    return op


def _parameters(route: Route, builder: SchemaBuilder) -> list[JSON]:
    """The path and query parameters of a route."""
    params: list[JSON] = []
    for path in route.path_fields:
        f = route.input.fields_by_name[path.split(".")[0]]
        for part in path.split(".")[1:]:
            f = message_type(f).fields_by_name[part]
        params.append({"name": path, "in": "path", "required": True, "schema": _scalar(f.type)})
    for path, f in route.query_fields():
        params.append(_query_parameter(path, f, builder))
    return params


_OPERATOR_SECURITY: list[JSON] = [{"bearerAuth": []}, {"apiKeyHeader": []}]
"""Every route's credentials but a public read's (none: ``public.is_public``)."""
_STREAM_PARAMETERS: list[JSON] = [
    {
        "name": "access_token",
        "in": "query",
        "required": False,
        "description": (
            "The credential, for clients that cannot send headers (browser EventSource). "
            "URLs end up in logs and browser history: prefer the Authorization header."
        ),
        "schema": {"type": "string"},
    },
    {
        "name": "Last-Event-ID",
        "in": "header",
        "required": False,
        "description": "SSE resume point (a version); used when from_version is not given.",
        "schema": {"type": "string", "pattern": r"^[0-9]+$"},
    },
]
"""The parameters of every streaming route (beside its request's)."""

_ERRORS = (
    ("400", "INVALID_ARGUMENT, FAILED_PRECONDITION"),
    ("401", "UNAUTHENTICATED"),
    ("403", "PERMISSION_DENIED"),
    ("404", "NOT_FOUND"),
    ("409", "ALREADY_EXISTS, ABORTED"),
    ("429", "RESOURCE_EXHAUSTED"),
    ("503", "UNAVAILABLE"),
)


def _stream_responses(ok_schema: JSON) -> JSON:
    return {
        "200": {
            "description": (
                "A stream of response messages: NDJSON (one JSON object per line; a final "
                '{"error": Status} line when the server ends the stream with an error) or, with '
                "`Accept: text/event-stream`, Server-Sent Events "
                f"(`event: {SSE_UPDATE_EVENT}` with `id: <version>`, `event: {SSE_HEARTBEAT_EVENT}`, "
                f"`event: {SSE_ERROR_EVENT}` with a Status, `event: {SSE_END_EVENT}`)."
            ),
            "content": {ct: {"schema": ok_schema} for ct in STREAM_CONTENT_TYPES},
        },
        "204": {"description": "SSE resume of a match that is over, with nothing new."},
    }


def build_openapi(routes: list[Route], *, title: str, version: str) -> JSON:
    """The OpenAPI 3.0 document for ``routes``."""
    builder = SchemaBuilder()
    builder.message(status_pb2.Status.DESCRIPTOR)
    for detail in (
        error_details_pb2.ErrorInfo,
        error_details_pb2.BadRequest,
        truco_error_details_pb2.IllegalActionDetail,
    ):
        builder.message(detail.DESCRIPTOR)
    paths: JSON = {}
    for route in routes:
        paths.setdefault(route.openapi_path, {})[route.http_method.lower()] = _operation(route, builder)
    return {
        "openapi": "3.0.3",
        "info": {
            "title": title,
            "version": version,
            "description": (
                "REST/JSON face of truco.v1.MatchService, generated from the proto's google.api.http "
                "annotations. Bodies use protobuf's JSON mapping (lowerCamelCase names on output, "
                "proto names also accepted on input; enums by name; int64 as strings). Errors are a "
                "google.rpc.Status with the same details as over gRPC; the details are "
                "google.rpc.ErrorInfo, google.rpc.BadRequest and truco.v1.IllegalActionDetail."
            ),
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": dict(sorted(builder.schemas.items())),
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A seat or spectator credential, or an operator API key.",
                },
                "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                "accessTokenQuery": {"type": "apiKey", "in": "query", "name": "access_token"},
            },
        },
    }

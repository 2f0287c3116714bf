"""The protobuf wire format, written directly: for the messages a move encodes many times
(each viewer's observation; a move's events and operator events, through their field plans'
``Plan.to_bytes``), where building a message field by field through the protobuf runtime,
its nested messages copied in, costs two to three times what writing its bytes costs
(docs/benchmarks.md, "The compiled build" and "Events written directly").

A message is written as a list of byte strings joined once; each field's tag comes from the
message's descriptor (:func:`tag`), which also checks that the field has the wire type the
writer gives it, so the ``.proto`` files stay the only definition of the messages: a field
renumbered changes the tag, a field retyped fails at import. What is written is what the
protobuf runtime writes for the same values (fields in number order, default scalars left
out, repeated numbers packed; only a map's entries may come in another order, which protobuf
leaves open), and parses to the same message (``tests/contract/test_wire.py``,
``tests/contract/test_codec.py``).
"""

from __future__ import annotations

from google.protobuf.descriptor import Descriptor, FieldDescriptor

VARINT = 0
LEN = 2

VARINT_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_BOOL,
        FieldDescriptor.TYPE_ENUM,
    }
)
"""The field types written as varints (packed when repeated)."""
_LEN_TYPES = frozenset(
    {FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES, FieldDescriptor.TYPE_MESSAGE}
)

_SMALL: list[bytes] = [bytes([i]) for i in range(128)]
_TWO: list[bytes] = [bytes([i & 0x7F | 0x80, i >> 7]) for i in range(128, 1 << 14)]
"""The varints of two bytes (128 to 16,383: a match's versions, a hand's numbers)."""
_MASK64 = (1 << 64) - 1


def varint(n: int) -> bytes:
    """``n`` as a base-128 varint; a negative number as its 64-bit two's complement (ten
    bytes: how protobuf writes a negative ``int32`` or ``int64``)."""
    if 0 <= n < 128:
        return _SMALL[n]
    if 0 < n < 1 << 14:
        return _TWO[n - 128]
    if n < 0:
        n &= _MASK64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` of ``data`` (unsigned: a negative number written by
    :func:`varint` reads as its 64-bit two's complement) and the position after it."""
    n = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        if byte < 0x80:
            return n, pos
        shift += 7


def tag(desc: Descriptor, name: str) -> bytes:
    """The tag of field ``name`` of ``desc`` (its number and wire type); a repeated number
    is packed (length-delimited). Raises :class:`TypeError` for a type this writer does not
    write."""
    fd = desc.fields_by_name[name]
    if fd.type in _LEN_TYPES or (fd.is_repeated and fd.type in VARINT_TYPES):
        kind = LEN
    elif fd.type in VARINT_TYPES:
        kind = VARINT
    else:
        raise TypeError(f"{desc.full_name}.{name}: no writer for field type {fd.type}")
    return varint(fd.number << 3 | kind)


def put_int(parts: list[bytes], t: bytes, value: int) -> None:
    """A singular number, enum or bool without presence: left out when zero."""
    if value:
        parts.append(t)
        parts.append(varint(value))


def put_opt(parts: list[bytes], t: bytes, value: int | None) -> None:
    """An ``optional`` number: written when set, zero too."""
    if value is not None:
        parts.append(t)
        parts.append(varint(value))


def put_bool(parts: list[bytes], t: bytes, value: bool) -> None:
    if value:
        parts.append(t)
        parts.append(b"\x01")


def put_str(parts: list[bytes], t: bytes, value: str) -> None:
    """A singular string without presence: left out when empty."""
    if value:
        put_bytes(parts, t, value.encode())


def put_bytes(parts: list[bytes], t: bytes, value: bytes) -> None:
    """A length-delimited field (bytes, or a message's serialized form): always written."""
    parts.append(t)
    parts.append(varint(len(value)))
    parts.append(value)


def one_field(t: bytes, parts: list[bytes]) -> bytes:
    """A message whose only field is the length-delimited ``t``, holding the fields ``parts``
    (a message wrapping one sub-message: a stream's update, a connection's frame)."""
    inner = b"".join(parts)
    return b"".join((t, varint(len(inner)), inner))


def put_strs(parts: list[bytes], t: bytes, values: tuple[str, ...]) -> None:
    """A repeated string: one field per item."""
    for value in values:
        put_bytes(parts, t, value.encode())


def put_packed(parts: list[bytes], t: bytes, values: tuple[int, ...]) -> None:
    """A repeated number, packed: left out when empty."""
    if values:
        put_bytes(parts, t, b"".join([varint(v) for v in values]))


__all__ = [
    "LEN",
    "VARINT",
    "VARINT_TYPES",
    "one_field",
    "put_bool",
    "put_bytes",
    "put_int",
    "put_opt",
    "put_packed",
    "put_str",
    "put_strs",
    "read_varint",
    "tag",
    "varint",
]

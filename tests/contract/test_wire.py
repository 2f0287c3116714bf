"""The direct protobuf writer (``truco_contract.codec.wire``) writes what the protobuf runtime
writes: numbers of every size and sign, strings, packed lists, presence."""

from __future__ import annotations

import pytest

from truco_contract.codec import wire
from truco_contract.pb import game_pb2, observation_pb2

_OBS = observation_pb2.Observation.DESCRIPTOR


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 16_383, 16_384, 2**31 - 1, 2**40, -1, -(2**31)])
def test_numbers_are_written_as_protobuf_writes_them(n: int) -> None:
    field = "seat" if -(2**31) <= n < 2**31 else "version"  # an optional int32, or an int64
    parts: list[bytes] = []
    wire.put_opt(parts, wire.tag(_OBS, field), n)
    expected = observation_pb2.Observation()
    setattr(expected, field, n)
    assert b"".join(parts) == expected.SerializeToString()


def test_every_number_of_one_to_three_bytes_is_written_as_protobuf_writes_it() -> None:
    expected = observation_pb2.Observation()
    for n in range(20_000):
        expected.version = n
        assert wire.tag(_OBS, "version") + wire.varint(n) == expected.SerializeToString() or n == 0


@pytest.mark.parametrize("n", [0, 1, 127, 128, 300, 16_383, 16_384, 2**31 - 1, 2**40, 2**63, -1, -(2**31)])
def test_a_varint_reads_back_from_where_it_starts(n: int) -> None:
    """Unsigned: a negative number reads as its 64-bit two's complement, as protobuf's."""
    data = b"\xff" + wire.varint(n) + b"tail"
    assert wire.read_varint(data, 1) == (n % 2**64, len(data) - 4)


def test_defaults_are_left_out_and_presence_is_kept() -> None:
    parts: list[bytes] = []
    wire.put_int(parts, wire.tag(_OBS, "dealer"), 0)
    wire.put_str(parts, wire.tag(_OBS, "turn_up"), "")
    wire.put_bool(parts, wire.tag(_OBS, "joined"), False)
    wire.put_packed(parts, wire.tag(_OBS, "scores"), ())
    assert parts == []
    wire.put_opt(parts, wire.tag(_OBS, "seat"), 0)  # optional: zero is a value
    msg = observation_pb2.Observation.FromString(b"".join(parts))
    assert msg.HasField("seat") and msg.seat == 0


def test_strings_lists_and_nested_messages_parse_back() -> None:
    play: list[bytes] = []
    wire.put_int(play, wire.tag(game_pb2.Play.DESCRIPTOR, "seat"), 3)
    wire.put_str(play, wire.tag(game_pb2.Play.DESCRIPTOR, "card"), "12c")
    trick: list[bytes] = []
    wire.put_bytes(trick, wire.tag(game_pb2.Trick.DESCRIPTOR, "plays"), b"".join(play))
    parts: list[bytes] = []
    wire.put_strs(parts, wire.tag(_OBS, "hand"), ("1e", "7o", "ñ"))
    wire.put_bytes(parts, wire.tag(_OBS, "tricks"), b"".join(trick))
    wire.put_packed(parts, wire.tag(_OBS, "scores"), (0, 15, 300))
    expected = observation_pb2.Observation(hand=["1e", "7o", "ñ"], scores=[0, 15, 300])
    expected.tricks.add().plays.add(seat=3, card="12c")
    assert observation_pb2.Observation.FromString(b"".join(parts)) == expected
    assert b"".join(parts) == expected.SerializeToString()  # fields in number order, as protobuf


def test_a_field_type_the_writer_does_not_write_is_refused() -> None:
    from google.protobuf import struct_pb2

    with pytest.raises(TypeError, match="no writer"):
        wire.tag(struct_pb2.Value.DESCRIPTOR, "number_value")

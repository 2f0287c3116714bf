"""The stream hub's poll command: the XREAD of every followed stream, kept packed and changed a
stream at a time."""

from __future__ import annotations

from hiredis import pack_command

from truco_server.stores.redis.feed import _PollCommand


def test_the_poll_command_kept_up_to_date_is_the_one_hiredis_packs() -> None:
    """The hub keeps its poll's XREAD packed and changes one stream's piece at a time (a
    stream followed or left, a cursor moved): always the bytes hiredis packs for the same
    command, streams in the order the hub holds them."""
    poll = _PollCommand(500)
    held: dict[str, int] = {}

    def expected() -> bytes:
        order = poll._mids
        assert sorted(order) == sorted(held)
        keys = [f"t:{{{m}}}:log".encode() for m in order]
        return pack_command(("XREAD", "COUNT", 500, "STREAMS", *keys, *[f"{held[m]}-0" for m in order]))

    for i, mid in enumerate(["m1", "m2", "m3", "m4"]):
        poll.add(mid, f"t:{{{mid}}}:log".encode(), i * 10)
        held[mid] = i * 10
    assert poll.packed() == expected()
    poll.move("m2", 12345)
    held["m2"] = 12345
    assert poll.packed() == expected()
    poll.remove("m1")  # the last stream takes its place
    del held["m1"]
    assert poll.packed() == expected()
    poll.remove("m3")
    del held["m3"]
    poll.move("m1", 7)  # no longer followed: nothing changes
    poll.remove("m1")
    assert poll.packed() == expected()
    poll.remove("m4")
    poll.remove("m2")
    held.clear()
    assert poll.packed() == pack_command(("XREAD", "COUNT", 500, "STREAMS"))

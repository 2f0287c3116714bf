"""What a match's event stream costs in Redis, by the number of entries in it.

    python benchmarks/stream_memory.py                      # 44-byte entries, node sizes 4096, 2048, 1024
    python benchmarks/stream_memory.py --value-bytes 80 --node-bytes 4096 512
    python benchmarks/stream_memory.py --node-bytes 4096 --counts 64 1000 --max-len 0   # a longer log

For each ``stream-node-max-bytes`` this starts a ``redis-server`` on a free loopback port
with that setting, appends entries the way a commit does (id ``<version>-0``, one field
``e``, ``MAXLEN ~ 64``: the default ``TRUCO_EVENT_LOG_MAX_LEN``; ``--max-len``) and prints
``MEMORY USAGE`` of the stream after 1, 4, 16, 32 and 64 entries (``--counts``). 44 bytes
is the mean stored entry measured in ``truco bench service`` (paulista, two players). Every
server is stopped by its pid at the end.

Since Redis 6.2 a stream's newest node is allocated at ``stream-node-max-bytes`` (at most
4 KiB) when it is created, so that appending does not reallocate on every entry
(redis/redis#6281): a match's stream costs about the same with one event as with sixty.
"""

from __future__ import annotations

import argparse
import os
import sys

from truco_tools.redis_proc import start_redis


def measure(node_bytes: int, value_bytes: int, counts: list[int], max_len: int) -> tuple[str, list[int]]:
    proc = start_redis(extra_args=("--stream-node-max-bytes", str(node_bytes)))
    try:
        r = proc.client()
        version = str(r.info("server")["redis_version"])
        sizes = []
        appended = 0
        trim = {"maxlen": max_len, "approximate": True} if max_len else {}
        for count in sorted(counts):
            while appended < count:
                appended += 1
                r.xadd("events", {"e": os.urandom(value_bytes)}, id=f"{appended}-0", **trim)
            sizes.append(int(r.memory_usage("events", samples=0) or 0))
        return version, sizes
    finally:
        proc.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--value-bytes", type=int, default=44, help="bytes per entry (default 44)")
    parser.add_argument(
        "--node-bytes", type=int, nargs="+", default=[4096, 2048, 1024], help="stream-node-max-bytes values"
    )
    parser.add_argument("--counts", type=int, nargs="+", default=[1, 4, 16, 32, 64], help="entries appended")
    parser.add_argument(
        "--max-len", type=int, default=64, help="MAXLEN ~ of each append (default 64; 0: none)"
    )
    args = parser.parse_args(argv)
    counts = sorted(args.counts)
    print(f"MEMORY USAGE of one stream of {args.value_bytes}-byte entries, by entries appended")
    print("stream-node-max-bytes | " + " | ".join(f"{n} entries" for n in counts))
    for node_bytes in args.node_bytes:
        version, sizes = measure(node_bytes, args.value_bytes, counts, args.max_len)
        print(f"{node_bytes} (redis {version}) | " + " | ".join(f"{s} B" for s in sizes), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Write a protoc image of the ``truco.v1`` contract for code generators in other languages.

    python scripts/proto_image.py gen/truco.binpb     # then: buf generate gen/truco.binpb ...

The image (a ``google.protobuf.FileDescriptorSet``: every file of ``proto/truco/v1/`` and every
file it imports, ``google/api/annotations.proto`` included, imports first) is read from the
descriptors compiled into the installed contract package, so it needs the client install
only: no protoc, no grpcio-tools, no mypy-protobuf (``scripts/gen_proto.py --image`` builds
one with protoc and source comments, for ``buf lint``). The contract's generated code is
checked against ``proto/`` in CI, so the image is the one of the protos in this checkout. The
folder of the file is created when missing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FileDescriptor

REPO = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO / "proto"


def contract_files() -> list[FileDescriptor]:
    """The compiled descriptors of every ``proto/truco/v1/*.proto``."""
    import truco_contract.pb  # noqa: F401  (registers the generated modules in the default pool)

    pool = descriptor_pool.Default()
    names = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "truco" / "v1").glob("*.proto"))
    if not names:
        raise SystemExit(f"no .proto files under {PROTO_ROOT / 'truco' / 'v1'}")
    return [pool.FindFileByName(name) for name in names]


def image(files: list[FileDescriptor]) -> descriptor_pb2.FileDescriptorSet:
    """``files`` and everything they import, each file after its imports (as protoc's
    ``--include_imports`` writes them)."""
    out = descriptor_pb2.FileDescriptorSet()
    done: set[str] = set()

    def add(f: FileDescriptor) -> None:
        if f.name in done:
            return
        done.add(f.name)
        for dep in f.dependencies:
            add(dep)
        f.CopyToProto(out.file.add())

    for f in files:
        add(f)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help="the image file to write, e.g. gen/truco.binpb")
    args = parser.parse_args(argv)
    out: Path = args.output
    out.parent.mkdir(parents=True, exist_ok=True)
    data = image(contract_files()).SerializeToString(deterministic=True)
    out.write_bytes(data)
    print(f"wrote {out} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

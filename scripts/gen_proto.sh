#!/usr/bin/env bash
# Regenerate contract/truco/v1 (Python, .pyi stubs, gRPC stubs) from proto/truco/v1.
# The one command for generated protobuf code; see scripts/gen_proto.py.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
exec "$PYTHON" scripts/gen_proto.py "$@"

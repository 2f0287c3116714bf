#!/usr/bin/env bash
# Fail when contract/truco/v1 is stale or proto/ breaks buf STANDARD lint.
#   1. regenerate into a temp dir and diff against the checked-in tree;
#   2. build a protoc image (google/api protos from googleapis-common-protos,
#      no BSR access needed) and run `buf lint` on the truco/ files in it;
#   3. `buf breaking` against the newest released contract in proto/releases/.
# Set SKIP_BUF=1 to skip step 2 (e.g. no node/npx on the machine).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}"
BUF="${BUF:-npx --yes @bufbuild/buf}"

"$PYTHON" scripts/gen_proto.py --check

if [ "${SKIP_BUF:-0}" = "1" ]; then
  echo "buf lint skipped (SKIP_BUF=1)"
  exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$PYTHON" scripts/gen_proto.py --image "$tmp/truco.binpb"
$BUF lint "$tmp/truco.binpb" --config "$PWD/buf.yaml" --path truco
echo "buf lint: clean"
# 3. no breaking change since the newest released contract (proto/releases/, recorded by
#    `scripts/gen_proto.py --release VERSION` when a version is released; see CHANGELOG.md).
release="$(ls proto/releases/truco-v1-*.binpb | sort -V | tail -n 1)"
$BUF breaking "$tmp/truco.binpb" --against "$release" --config "$PWD/buf.yaml"
echo "buf breaking: no breaking change against $(basename "$release" .binpb)"

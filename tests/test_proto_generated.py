"""The checked-in generated protobuf code (contract/truco/) matches proto/truco/v1.

Fails when someone edits a .proto without running ``scripts/gen_proto.sh``, or edits the
generated files by hand. buf lint runs in ``scripts/check_proto.sh`` (it needs npx).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.helpers.scripts import load_script

REPO = Path(__file__).resolve().parent.parent


def _load_gen_proto():  # type: ignore[no-untyped-def]
    return load_script(REPO / "scripts" / "gen_proto.py")


def test_generated_code_is_current() -> None:
    problems = _load_gen_proto().check()
    assert not problems, "generated code is stale; run scripts/gen_proto.sh\n" + "\n".join(problems)


def test_check_command_exits_zero() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_proto.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_generated_package_imports_from_proto_package_path() -> None:
    from truco.v1 import match_service_pb2, match_service_pb2_grpc

    service = match_service_pb2.DESCRIPTOR.services_by_name["MatchService"]
    assert service.full_name == "truco.v1.MatchService"
    assert {m.name for m in service.methods} == {
        "CreateMatch",
        "SubmitAction",
        "StreamObservations",
        "GetMatch",
        "ListMatches",
        "CancelMatch",
        "JoinMatch",
        "GetMatchRecord",
        "AddTime",
        "AdjudicateMatch",
        "ReissueCredential",
        "Connect",
    }
    assert hasattr(match_service_pb2_grpc, "add_MatchServiceServicer_to_server")


def test_every_rpc_has_an_http_annotation() -> None:
    from google.api import annotations_pb2

    from truco.v1 import match_service_pb2

    service = match_service_pb2.DESCRIPTOR.services_by_name["MatchService"]
    for method in service.methods:
        rule = method.GetOptions().Extensions[annotations_pb2.http]
        if method.client_streaming:  # the player connection: gRPC only, REST keeps its routes
            assert not rule.WhichOneof("pattern"), f"{method.name} streams requests: no HTTP rule"
            continue
        assert rule.WhichOneof("pattern"), f"{method.name} has no google.api.http rule"


def test_stale_file_is_detected(tmp_path: Path) -> None:
    gen = _load_gen_proto()
    expected = tmp_path / "expected"
    actual = tmp_path / "actual"
    for root in (expected, actual):
        (root / "v1").mkdir(parents=True)
        (root / "v1" / "a_pb2.py").write_text("x = 1\n")
    (actual / "v1" / "a_pb2.py").write_text("x = 2\n")
    (actual / "v1" / "old_pb2.py").write_text("")
    problems = gen.diff_trees(expected, actual)
    assert any(p.startswith("stale: ") for p in problems)
    assert any(p.startswith("not generated any more") for p in problems)

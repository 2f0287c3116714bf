"""Every Python code block in README.md and docs/ runs (docs/README.md, "Code blocks").

Each document is one test: its ``python`` blocks run in order in one namespace (a later block
sees what an earlier one defined), by Sybil's Markdown parser. A block preceded by
``<!-- skip: next "why" -->`` is shown, not run. Blocks in other languages (``sh``, ``json``,
``yaml``, ``proto``, ``text``, ``js``) are illustrations and are not run. The blocks that talk to
a server read its address from ``TRUCO_SERVER``: the fixture starts an in-memory worker with the
operator key ``ops-secret`` and points that variable at it.
"""

from __future__ import annotations

import os
import unittest
from collections.abc import Iterator
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

from truco_server.app.embedded import EmbeddedServer
from truco_server.core.config import parse_api_keys

pytestmark = pytest.mark.timeout(240)

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted(
    str(p.relative_to(ROOT)) for p in [ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("docs/*/*.md")]
)
SYBIL = Sybil(parsers=[PythonCodeBlockParser(), SkipParser()])


@pytest.fixture(scope="module")
def docs_server() -> Iterator[str]:
    srv = EmbeddedServer(api_keys=parse_api_keys("ops=ops-secret")).start()
    try:
        yield srv.address
    finally:
        srv.stop()


def test_the_collector_finds_the_documents() -> None:
    assert "README.md" in DOCUMENTS and "docs/sdk.md" in DOCUMENTS
    blocks = sum(1 for d in DOCUMENTS for _ in SYBIL.parse(ROOT / d))
    assert blocks >= 10


@pytest.mark.parametrize("document", DOCUMENTS)
def test_python_blocks_run(
    document: str, docs_server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TRUCO_SERVER", docs_server)
    monkeypatch.chdir(tmp_path)  # files a block writes stay out of the checkout
    doc = SYBIL.parse(ROOT / document)
    for example in doc:
        try:
            failure = example.evaluate()
        except unittest.SkipTest:  # <!-- skip: next "why" -->: shown, not run
            continue
        except Exception as exc:
            raise AssertionError(f"{document}:{example.line}: {type(exc).__name__}: {exc}") from exc
        assert not failure, f"{document}:{example.line}: {failure}"
    assert os.environ["TRUCO_SERVER"] == docs_server

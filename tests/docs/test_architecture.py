"""docs/architecture.md names only what exists: every dotted name of ours it quotes is a module,
or an attribute reached from one (a class, a function, a method), and every source path it
quotes is in the repository."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
OURS = ("truco_engine", "truco_match", "truco_contract", "truco_server", "truco_client", "truco_bots")
_QUOTED = re.compile(r"`([^`\s]+)`")


def _quoted() -> list[str]:
    return _QUOTED.findall(DOC.read_text(encoding="utf-8"))


def _resolve(dotted: str) -> object:
    """The object ``dotted`` names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            found = getattr(found, name)
        return found
    raise ModuleNotFoundError(dotted)


def test_the_doc_quotes_names_and_paths() -> None:
    quoted = _quoted()
    assert sum(q.startswith(OURS) for q in quoted) > 50
    assert sum(q.endswith((".py", "/")) for q in quoted) > 5


@pytest.mark.parametrize("name", sorted({q for q in _quoted() if q.startswith(OURS) and "/" not in q}))
def test_every_name_exists(name: str) -> None:
    try:
        _resolve(name)
    except (ImportError, AttributeError) as exc:
        pytest.fail(f"docs/architecture.md names `{name}`, which does not exist: {exc}")


@pytest.mark.parametrize("path", sorted({q for q in _quoted() if q.endswith((".py", "/", ".proto"))}))
def test_every_path_exists(path: str) -> None:
    candidates = [ROOT / path, ROOT / "server" / path, ROOT / "contract" / path, ROOT / "clients" / path]
    assert any(c.exists() for c in candidates), f"docs/architecture.md names {path}, which does not exist"


def test_the_action_walks_through_six_modules() -> None:
    """The walk of one action names its modules in bold, one per step, and no more than six."""
    text = DOC.read_text(encoding="utf-8")
    walk = text.split("## One action, end to end", 1)[1].split("### Out to every seat", 1)[0]
    modules = re.findall(r"^\d+\. \*\*`([^`]+)`\*\*", walk, flags=re.M)
    assert 1 <= len(modules) <= 6, modules
    for module in modules:
        assert any((base / module).exists() for base in (ROOT, ROOT / "server", ROOT / "contract")), module


def test_a_new_rpc_touches_at_most_five_hand_written_files() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Adding an RPC", 1)[1]
    steps = re.findall(r"^\d+\. ", section, flags=re.M)
    assert 1 <= len(steps) <= 5, steps

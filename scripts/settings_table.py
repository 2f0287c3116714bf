"""Write the worker's settings table into every document that shows it.

    python scripts/settings_table.py          # rewrite the tables in place
    python scripts/settings_table.py --check  # exit 1 when a document is stale

The table comes from ``truco_server.core.config.settings_markdown_table()``; a document holds it
as the block of lines starting with its header row.
"""

from __future__ import annotations

import sys
from pathlib import Path

from truco_server.core.config import settings_markdown_table

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/operations.md")
HEADER = "| environment variable | flag | default | meaning |"


def refreshed(text: str) -> str:
    lines = text.split("\n")
    start = lines.index(HEADER)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join([*lines[:start], settings_markdown_table().rstrip("\n"), *lines[end:]])


def main(argv: list[str]) -> int:
    stale = []
    for name in DOCUMENTS:
        path = ROOT / name
        text = path.read_text()
        new = refreshed(text)
        if new != text:
            stale.append(name)
            if "--check" not in argv:
                path.write_text(new)
    if stale:
        verb = "stale" if "--check" in argv else "rewritten"
        print(f"{verb}: {', '.join(stale)}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

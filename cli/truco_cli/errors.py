"""How the ``truco`` command reports a user's mistake: one line on stderr, a non-zero exit.

A subcommand raises :class:`UsageError` (exit 2) for a mistake in what it was given; the SDK's
:class:`~truco_client.errors.TrucoClientError` (exit 1) for what a server refused or a server
that cannot be reached; :func:`run_command` turns both, the engine's
:class:`~truco_engine.errors.TrucoError` (an unknown preset, a bad rule option; exit 2) and
Ctrl-C (exit 130) into that line. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable


class UsageError(Exception):
    """A mistake in the command's arguments or input (exit status 2)."""


def run_command(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    from truco_client.errors import TrucoClientError
    from truco_engine.errors import TrucoError

    name = " ".join(p for p in (getattr(args, "command", None), getattr(args, "subcommand", None)) if p)
    try:
        return int(func(args) or 0)
    except (UsageError, TrucoError) as exc:
        print(f"truco {name}: {exc}", file=sys.stderr)
        return 2
    except TrucoClientError as exc:
        print(f"truco {name}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130

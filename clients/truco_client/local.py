"""Bots against each other in-process, with the local rules engine (defined in
:mod:`truco_kit.local`)::

    from truco_client.local import run_local
    result = run_local([MyBot, RandomBot], "argentine", n_matches=1000)
"""

from truco_kit.local import (
    BotFactory,
    IllegalBotAction,
    LocalResults,
    MatchOutcome,
    play_local_match,
    run_local,
)

__all__ = ["BotFactory", "IllegalBotAction", "LocalResults", "MatchOutcome", "play_local_match", "run_local"]

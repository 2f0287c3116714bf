"""The league service: leagues and tournaments run across workers, the bot lobby, ratings.

Built on the pure tournament library :mod:`truco_server.leagues`; see
:mod:`truco_server.services.leagues.service` and docs/leagues.md.
"""

from truco_server.services.leagues.documents import BotDoc, EntrantDoc, LeagueDoc, PairingDoc, State, TableDoc
from truco_server.services.leagues.service import (
    BOT_PREFIX,
    DUPLICATE_DEALS,
    LeagueNotFound,
    LeagueService,
    LeagueSpec,
    LeagueStateError,
)

__all__ = [
    "BOT_PREFIX",
    "DUPLICATE_DEALS",
    "BotDoc",
    "EntrantDoc",
    "LeagueDoc",
    "LeagueNotFound",
    "LeagueService",
    "LeagueSpec",
    "LeagueStateError",
    "PairingDoc",
    "State",
    "TableDoc",
]

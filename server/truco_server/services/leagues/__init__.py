"""The league service: leagues and tournaments run across workers, the bot lobby, ratings.

Built on the pure tournament library :mod:`truco_server.leagues`: the operator's leagues in
:mod:`.service`, which builds the bot accounts and lobby (:mod:`.bots`), the rating books
(:mod:`truco_server.services.ratings`) and the league job (:mod:`.job`); see docs/leagues.md.
"""

from truco_server.services.leagues.bots import BOT_PREFIX, BotAccounts
from truco_server.services.leagues.documents import (
    MAX_NAME,
    BotDoc,
    EntrantDoc,
    LeagueDoc,
    PairingDoc,
    State,
    TableDoc,
)
from truco_server.services.leagues.errors import LeagueNotFound, LeagueStateError
from truco_server.services.leagues.job import DUPLICATE_DEALS, LeagueJob
from truco_server.services.leagues.series import series_wins
from truco_server.services.leagues.service import LeagueService, LeagueSpec

__all__ = [
    "BOT_PREFIX",
    "DUPLICATE_DEALS",
    "MAX_NAME",
    "BotAccounts",
    "BotDoc",
    "EntrantDoc",
    "LeagueDoc",
    "LeagueJob",
    "LeagueNotFound",
    "LeagueService",
    "LeagueSpec",
    "LeagueStateError",
    "PairingDoc",
    "State",
    "TableDoc",
    "series_wins",
]

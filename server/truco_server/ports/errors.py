"""The errors every store raises, whatever its port and adapter."""

from __future__ import annotations

from truco_server.ports.documents import DocRef


class StorageError(Exception):
    """Base class of every error a store raises."""


class MatchNotFound(StorageError, KeyError):
    """The match does not exist (never created, or expired after its retention time)."""

    def __init__(self, match_id: str) -> None:
        super().__init__(f"match {match_id!r} not found")
        self.match_id = match_id

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class MatchExists(StorageError):
    """:meth:`~truco_server.ports.matches.MatchLog.create` was called with an id that is
    already taken."""

    def __init__(self, match_id: str) -> None:
        super().__init__(f"match {match_id!r} already exists")
        self.match_id = match_id


class VersionConflict(StorageError):
    """The match moved on: the commit's ``expected_version`` differs from the stored version
    (or the stored version is not the state the committer saw: a failover). Nothing was
    written; ``current_version`` is the version found in the store."""

    def __init__(self, match_id: str, expected_version: int, current_version: int) -> None:
        super().__init__(
            f"match {match_id!r} is at version {current_version}, commit expected version {expected_version}"
        )
        self.match_id = match_id
        self.expected_version = expected_version
        self.current_version = current_version


class ParentMissing(StorageError):
    """A write that names the documents it belongs to (``requires``: a rating book's league, a
    bot assignment's bot account, a league's match) found one of them missing -- deleted, or
    lost with a Redis that restarted without persistence. Nothing was written; ``ref`` is the
    missing document (a :class:`~truco_server.ports.documents.DocRef`)."""

    def __init__(self, ref: DocRef) -> None:
        super().__init__(f"{ref.kind} {ref.doc_id!r} does not exist; nothing written")
        self.ref = ref


class InvalidPageToken(StorageError, ValueError):
    """A ``page_token`` that this store did not hand out (or for another owner)."""


class StoreUnavailable(StorageError):
    """The store could not be reached (Redis down, paused, failing over, a cluster slot
    without a primary) for longer than ``StoreSettings.retry_seconds``. Nothing is known to
    have been written; a commit may or may not have been applied, so the caller retries it
    with the same ``request_id``. Every adapter raises this, and only this, for a fault of its
    backend: nothing above the stores knows a backend's exceptions."""


class RateExceeded(StorageError):
    """A commit's :class:`~truco_server.ports.quotas.RateCharge` found its rate spent: nothing
    was written; ``wait`` seconds until it would be granted."""

    def __init__(self, key: str, wait: float) -> None:
        super().__init__(f"rate {key!r} spent for {wait:.3f} s")
        self.key = key
        self.wait = wait

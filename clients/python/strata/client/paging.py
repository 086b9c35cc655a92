"""Following ``next_page_token`` safely: a server cannot keep a client paging forever.

Every ``iter_*`` method of the clients (and so the CLI, MemFS and the MCP adapters built on them)
follows pages through a :class:`PageGuard`: a token the server already gave in this listing, or
more than ``max_pages`` pages (``MAX_PAGES`` unless the client was made with another
``max_pages``), ends the listing with :class:`PagingError` instead of another call.
"""

from __future__ import annotations

import grpc

from strata.client.errors import UnknownError

MAX_PAGES = 10_000
"""Pages one listing may take; at the server's largest page (1000 items) that is 10 million items."""


class PagingError(UnknownError):
    """The server's pages do not end: a repeated token, or more than the client's page cap."""

    def __init__(self, message: str) -> None:
        super().__init__(grpc.StatusCode.UNKNOWN, message, reason="PAGING_DID_NOT_END")


class PageGuard:
    """Checks each ``next_page_token`` of one listing: ``next(token)`` gives the token to ask for next
    ("" when the listing is complete) or raises :class:`PagingError`."""

    def __init__(self, listing: str, max_pages: int = MAX_PAGES) -> None:
        self._listing = listing
        self._max_pages = max_pages
        self._pages = 1
        self._seen: set[str] = {""}

    def next(self, token: str) -> str:
        if not token:
            return ""
        if token in self._seen:
            raise PagingError(
                f"{self._listing}: the server sent page token {token[:64]!r} a second time; "
                "stopping instead of paging forever"
            )
        if self._pages >= self._max_pages:
            raise PagingError(
                f"{self._listing}: more than {self._max_pages} pages; stopping (a client made with a "
                "larger max_pages follows longer listings)"
            )
        self._seen.add(token)
        self._pages += 1
        return token

"""Server-side sessions: who a browser acts as, and the one-time tokens its forms must carry.

Rules:
- The browser holds only a random session id, in an ``HttpOnly``, ``SameSite=Strict`` cookie; the
  API key it signed in with stays in this process (inside the session's gRPC clients) and is never
  written into a page, a URL or a log.
- Every page rendered for a session gets one fresh form token (all forms of that page carry it). A
  change (any POST) must present a token this session was issued and has not used: it is consumed
  on use, so a forged form (no token, another session's token) and a replayed one (a token already
  used) are both refused, and a back-button resubmission asks the person to reload.
- A session expires ``ttl`` seconds after sign-in; an expired or unknown id is no session.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from strata.client import AsyncAdminClient, AsyncMemoryClient

COOKIE = "strata_console"
TOKENS_KEPT = 64
"""Form tokens a session keeps open at once (pages rendered and not yet submitted); older ones lapse."""
MAX_SESSIONS = 10_000
"""Sessions kept at once; beyond it the oldest ones that hold no key (auth off, before sign-in) go first."""


@dataclass
class Session:
    """One signed-in browser: its tenant (``None``: the server's default), whether it holds the
    admin key, and the clients its calls go through."""

    id: str
    tenant: str | None
    expires: float
    memory: AsyncMemoryClient | None = None
    admin: AsyncAdminClient | None = None
    signed_in: bool = False
    tokens: OrderedDict[str, None] = field(default_factory=OrderedDict)

    @property
    def is_admin(self) -> bool:
        return self.admin is not None

    def issue_token(self) -> str:
        """A new one-time form token for the page being rendered."""
        token = secrets.token_urlsafe(24)
        self.tokens[token] = None
        while len(self.tokens) > TOKENS_KEPT:
            self.tokens.popitem(last=False)
        return token

    def consume_token(self, token: str) -> bool:
        """True once for a token this session issued; False for any other (forged or replayed)."""
        if not token or token not in self.tokens:
            return False
        del self.tokens[token]
        return True

    async def close(self) -> None:
        for client in (self.memory, self.admin):
            if client is not None:
                await client.close()


class SessionStore:
    """Sessions by id, in memory (a restart signs everyone out)."""

    def __init__(self, ttl_seconds: float) -> None:
        self._ttl = ttl_seconds
        self._sessions: dict[str, Session] = {}

    def get(self, session_id: str | None) -> Session | None:
        """The live session of this id, or None (unknown, or expired)."""
        if not session_id:
            return None
        found = self._sessions.get(session_id)
        if found is None or found.expires < time.monotonic():
            return None
        return found

    def open(self, tenant: str | None) -> Session:
        """A new session; the caller attaches its clients. Drops expired and, over MAX_SESSIONS, the
        oldest sessions that hold no clients (so anonymous visits cannot grow the store without bound)."""
        now = time.monotonic()
        keyless = [s for s in self._sessions.values() if s.memory is None and s.admin is None]
        excess = len(self._sessions) + 1 - MAX_SESSIONS
        for index, session in enumerate(keyless):
            if session.expires < now or index < excess:
                del self._sessions[session.id]
        session = Session(secrets.token_urlsafe(32), tenant, now + self._ttl)
        self._sessions[session.id] = session
        return session

    async def end(self, session: Session) -> None:
        """Forget the session and close its clients."""
        self._sessions.pop(session.id, None)
        await session.close()

    async def sweep(self) -> None:
        """Close the sessions that have expired."""
        now = time.monotonic()
        for session in [s for s in self._sessions.values() if s.expires < now]:
            await self.end(session)

    async def close(self) -> None:
        for session in list(self._sessions.values()):
            await self.end(session)

"""Opaque page tokens (AIP-158): an offset bound to the list it came from.

A token carries the offset of the next page and a digest of the request's filter; reusing it with a
different filter is INVALID_ARGUMENT rather than a silently wrong page. Tokens are validated, not
signed: a client that edits one can at most ask for another page of its own list, so every decoded
value is checked (an integer offset from 0 to ``MAX_OFFSET``, a string digest) and anything else,
however it was made, is INVALID_ARGUMENT.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence

from strata_memory.limits import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE
from strata_memory.store.records import Page
from strata_serving.errors import InvalidArgument

__all__ = ["DEFAULT_PAGE_SIZE", "MAX_OFFSET", "MAX_PAGE_SIZE", "next_token", "page_from"]
MAX_OFFSET = 2**53
"""Largest offset a token may carry (every store and JSON number holds it exactly)."""
MAX_TOKEN_CHARS = 1024


def page_from(page_size: int, page_token: str, *, scope: Sequence[object]) -> Page:
    """The page a request asks for. ``scope`` names the list (method and filter values)."""
    if page_size < 0:
        raise InvalidArgument.field("page_size", f"must not be negative (got {page_size})")
    size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    if not page_token:
        return Page(0, size)
    offset, digest = _decode(page_token)
    if digest != _digest(scope):
        raise InvalidArgument.field("page_token", "belongs to a different list or filter")
    return Page(offset, size)


def _decode(page_token: str) -> tuple[int, str]:
    """The offset and scope digest a token holds; INVALID_ARGUMENT for anything not shaped so."""
    not_ours = InvalidArgument.field("page_token", "is not a token this service issued")
    if len(page_token) > MAX_TOKEN_CHARS:
        raise not_ours
    try:
        decoded = json.loads(base64.urlsafe_b64decode(page_token.encode("ascii")))
    except (ValueError, UnicodeError, RecursionError) as bad:
        raise not_ours from bad
    if not isinstance(decoded, dict):
        raise not_ours
    offset, digest = decoded.get("o"), decoded.get("s")
    # bool is an int in Python; a float (1e400 decodes to inf) or a string is not an offset we issued.
    if type(offset) is not int or not isinstance(digest, str) or not 0 <= offset <= MAX_OFFSET:
        raise not_ours
    return offset, digest


def next_token(page: Page, returned: int, *, scope: Sequence[object], total: int | None = None) -> str:
    """The token for the page after ``page``, or "" when this was the last one."""
    following = page.offset + returned
    if returned < page.size or (total is not None and following >= total):
        return ""
    payload = json.dumps({"o": following, "s": _digest(scope)}).encode()
    return base64.urlsafe_b64encode(payload).decode()


def _digest(scope: Sequence[object]) -> str:
    return hashlib.sha256(json.dumps([str(part) for part in scope]).encode()).hexdigest()[:16]

"""Opaque page tokens (AIP-158): an offset bound to the list it came from.

A token carries the offset of the next page and a digest of the request's filter; reusing it with a
different filter is INVALID_ARGUMENT rather than a silently wrong page.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence

from strata_memory.store.records import Page
from strata_serving.errors import InvalidArgument

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


def page_from(page_size: int, page_token: str, *, scope: Sequence[object]) -> Page:
    """The page a request asks for. ``scope`` names the list (method and filter values)."""
    if page_size < 0:
        raise InvalidArgument.field("page_size", f"must not be negative (got {page_size})")
    size = min(page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    if not page_token:
        return Page(0, size)
    try:
        decoded = json.loads(base64.urlsafe_b64decode(page_token.encode()))
        offset, digest = int(decoded["o"]), str(decoded["s"])
    except (ValueError, KeyError, TypeError) as bad:
        raise InvalidArgument.field("page_token", "is not a token this service issued") from bad
    if digest != _digest(scope) or offset < 0:
        raise InvalidArgument.field("page_token", "belongs to a different list or filter")
    return Page(offset, size)


def next_token(page: Page, returned: int, *, scope: Sequence[object], total: int | None = None) -> str:
    """The token for the page after ``page``, or "" when this was the last one."""
    following = page.offset + returned
    if returned < page.size or (total is not None and following >= total):
        return ""
    payload = json.dumps({"o": following, "s": _digest(scope)}).encode()
    return base64.urlsafe_b64encode(payload).decode()


def _digest(scope: Sequence[object]) -> str:
    return hashlib.sha256(json.dumps([str(part) for part in scope]).encode()).hexdigest()[:16]

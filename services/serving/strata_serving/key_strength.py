"""The rule every configured key must pass before a service starts (docs/security.md, "Key rule").

A configured key — the admin key, the service key, the Qdrant key — is refused at start-up when
any of these holds:

* it is shorter than :data:`MIN_KEY_CHARS` (24) characters;
* it contains a placeholder word documentation uses (``replace-me``, ``changeme``, ``example``, …);
* it holds less than :data:`MIN_KEY_BITS` (80) bits by the character-frequency estimate: its length
  times the Shannon entropy of its own characters, so repeats (``aaaa…``, ``abab…``) score low;
* more than a third of its steps continue the step before (``abcd…``, ``0000…``, ``2468…``).

``openssl rand -hex 24`` (48 characters, about 180 bits by the estimate) always passes; a
word-based key (``replace-me-admin-key``) does not. The estimate cannot prove randomness, it only
refuses what is visibly not random; the message names the rule so the operator can generate a key.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

MIN_KEY_CHARS = 24
MIN_KEY_BITS = 80.0
PLACEHOLDER_WORDS = (
    "replace-me",
    "replace_me",
    "replaceme",
    "change-me",
    "change_me",
    "changeme",
    "placeholder",
    "example",
    "your-key",
    "your_key",
)
MAX_PATTERN_SHARE = 1 / 3
HOW_TO_MAKE_ONE = "generate one with `openssl rand -hex 24`"


def estimated_bits(key: str) -> float:
    """Length times the Shannon entropy (bits per character) of the key's character frequencies."""
    counts = Counter(key)
    n = len(key)
    return n * -sum(c / n * math.log2(c / n) for c in counts.values()) if n else 0.0


def _pattern_share(key: str) -> float:
    """The share of steps between neighbouring characters that repeat the previous step."""
    steps = [ord(b) - ord(a) for a, b in itertools.pairwise(key)]
    if len(steps) < 2:
        return 0.0
    repeats = sum(1 for a, b in itertools.pairwise(steps) if a == b)
    return repeats / (len(steps) - 1)


def key_weakness(key: str) -> str | None:
    """Why ``key`` is refused under the module's rule, or ``None`` when it passes."""
    lowered = key.lower()
    placeholder = next((word for word in PLACEHOLDER_WORDS if word in lowered), None)
    if placeholder is not None:
        return f"it contains the placeholder {placeholder!r}"
    if len(key) < MIN_KEY_CHARS:
        return f"it is {len(key)} characters, fewer than {MIN_KEY_CHARS}"
    bits = estimated_bits(key)
    if bits < MIN_KEY_BITS:
        return f"it holds about {bits:.0f} bits by character frequency, fewer than {MIN_KEY_BITS:.0f}"
    if _pattern_share(key) > MAX_PATTERN_SHARE:
        return "it is mostly a run or a sequence of characters"
    return None


def check_key(name: str, key: str) -> None:
    """Raise ``ValueError`` naming the setting ``name`` when ``key`` breaks the rule."""
    reason = key_weakness(key)
    if reason is not None:
        raise ValueError(
            f"{name} is refused: {reason}. A key needs {MIN_KEY_CHARS}+ characters, no placeholder "
            f"text and at least {MIN_KEY_BITS:.0f} bits by character frequency; {HOW_TO_MAKE_ONE}"
        )

"""What the retrieval engine needs from an embedding model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors of a fixed dimension.

    ``name`` identifies the model and its numeric precision; an index records it and refuses to be
    opened with a different one, because vectors from two models are not comparable.
    """

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """One row per text, in input order (``[len(texts), dimension]``)."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """One vector (``[dimension]``) for a search query."""
        ...

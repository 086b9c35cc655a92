"""The full-text leg: BM25 over a Tantivy index on disk, English stemming, filters inside the query.

User text is never query syntax. Only its Unicode word characters are kept, and each word is sent to
the parser as a quoted literal (``"word"``), so quotes, colons, brackets, ``AND``/``NOT``, ``*``,
field names and emoji can neither raise nor change the query; the words are OR-ed and ranked by
BM25. English function words ("the", "of", "what", ...) are dropped from the query (never from
the index) unless nothing else is left: their BM25 weight is near zero, but matching them makes the
leg score almost every document (slower, and no better: bench/perf/findings.md).

A document's context (a message's previous turn, when the full-text leg reads it) is indexed after
its text in ``text``, as one field, and the text alone again in ``own_text``. Each query word is
looked for in both, and a match in ``own_text`` adds ``own_text_weight`` of its BM25 score there: a
reply such as "Yes, last Saturday!" is still found through the words of the turn it answers, while
the turn that says the words outranks the reply that only has them as context (with the context
scored as the reply's own words, the reply could come first: tests/retrieval/test_context_field.py).
Measured on LoCoMo and on a long haystack of all its conversations in one agent
(bench/locomo/context_field.py): this beats both the text with its context alone and the context in
a lower-weighted field of its own (per-field BM25 counts a word of both fields twice, unsaturated).

Filters are exact terms on raw (untokenised) fields and an integer range on the creation time,
wrapped in a zero-score clause so they restrict without changing BM25 scores.

One process owns the index: it holds the single writer (opened at the first write, released by
:meth:`TantivyTextIndex.release_writer`), commits each batch and reloads its reader after every
commit, so a search that starts after a write returns sees that write. BM25's statistics are the
index's own: :mod:`strata_retrieval.text_tenants` keeps one index per tenant.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from pathlib import Path

import tantivy

from strata_retrieval.model import DEFAULT_OWN_TEXT_WEIGHT, Document, DocumentFilter, ScoredKey, TagMatch
from strata_retrieval.timestamps import to_micros

_WORD = re.compile(r"\w+")
MAX_QUERY_WORDS = 256  # longer queries keep their first 256 words
# Function words dropped from queries. Short on purpose: negations ("not", "no") and question words
# that carry meaning in chat ("when", "where", "who") are kept.
_STOPWORDS = """
a an the and or but if then so than as of at by for from in into on onto to with about over under
is am are was were be been being do does did has have had having it its this that these those there
here i me my we our you your he him his she her they them their what which can could would should
will shall may might must just very too also
"""
QUERY_STOPWORDS = frozenset(_STOPWORDS.split())
_FILTER_FIELDS = ("tenant_id", "agent_id", "archive_id", "conversation_id", "kind", "role", "tags")


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("key", stored=True, tokenizer_name="raw")
    builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
    builder.add_text_field("own_text", stored=False, tokenizer_name="en_stem")
    for name in _FILTER_FIELDS:
        builder.add_text_field(name, stored=False, tokenizer_name="raw")
    builder.add_integer_field("created_us", stored=False, indexed=True, fast=True)
    return builder.build()


def query_words(text: str) -> list[str]:
    """The literal words a full-text search looks for (Unicode ``\\w+`` runs, at most 256)."""
    return _WORD.findall(text)[:MAX_QUERY_WORDS]


def search_terms(text: str) -> list[str]:
    """The words a search sends to the index: ``query_words`` without English function words,
    or all of them when the query holds nothing else ("who is it?" still matches)."""
    words = query_words(text)
    return [word for word in words if word.lower() not in QUERY_STOPWORDS] or words


class TantivyTextIndex:
    """BM25 search over the documents' text, restricted by a :class:`DocumentFilter`."""

    def __init__(
        self,
        path: Path,
        *,
        writer_heap_bytes: int = 64_000_000,
        own_text_weight: float = DEFAULT_OWN_TEXT_WEIGHT,
    ) -> None:
        """``own_text_weight``: what a word matched in a document's own text adds, as a share of its
        score in the text with the context (0: the two scored as one text)."""
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._own_text_weight = own_text_weight
        self._schema = _schema()
        self._index = tantivy.Index(self._schema, path=str(path), reuse=True)
        self._heap_bytes = writer_heap_bytes
        self._open_writer: tantivy.IndexWriter | None = None
        self._write_lock = threading.Lock()

    @property
    def _writer(self) -> tantivy.IndexWriter:
        """The index's writer, opened on first use (the caller holds the write lock)."""
        if self._open_writer is None:
            self._open_writer = self._index.writer(heap_size=self._heap_bytes, num_threads=1)
        return self._open_writer

    @property
    def writing(self) -> bool:
        """Whether the writer (its lock file and threads) is open."""
        return self._open_writer is not None

    def release_writer(self) -> None:
        """Close the writer (the next write opens it again); searches go on meanwhile."""
        with self._write_lock:
            if self._open_writer is not None:
                self._open_writer.wait_merging_threads()  # consumes the writer
                self._open_writer = None

    def upsert(self, documents: Sequence[Document]) -> None:
        """Replace (or add) each document by key, in one commit; visible to searches on return."""
        with self._write_lock:
            for document in documents:
                self._writer.delete_documents_by_term("key", document.key)
                self._writer.add_document(self._as_tantivy(document))
            self._commit()

    def delete(self, tenant_id: str, keys: Sequence[str]) -> None:
        """Remove ``keys`` (absent keys are ignored); a key already names its tenant, so
        ``tenant_id`` selects nothing more here."""
        with self._write_lock:
            for key in keys:
                self._writer.delete_documents_by_term("key", key)
            self._commit()

    def search(self, text: str, flt: DocumentFilter, limit: int) -> list[ScoredKey]:
        """Best ``limit`` documents by BM25 among those matching ``flt``; [] when ``text`` has no words."""
        words = search_terms(text)
        if not words or limit <= 0:
            return []
        literals = " ".join(f'"{word}"' for word in words)
        if self._own_text_weight > 0:  # each word: with the context, plus a share in the text alone
            matched = self._index.parse_query(
                literals, ["text", "own_text"], field_boosts={"own_text": self._own_text_weight}
            )
        else:
            matched = self._index.parse_query(literals, ["text"])
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, matched),
                (tantivy.Occur.Must, tantivy.Query.const_score_query(self._filter_query(flt), 0.0)),
            ]
        )
        searcher = self._index.searcher()
        hits = searcher.search(query, limit, count=False).hits
        return [ScoredKey(key=searcher.doc(address)["key"][0], score=float(score)) for score, address in hits]

    def held(self, tenant_id: str, keys: Sequence[str]) -> set[str]:
        """Those of ``keys`` the index holds (deleted documents are gone once a delete commits); a
        key already names its tenant, so ``tenant_id`` selects nothing more here."""
        searcher = self._index.searcher()
        return {key for key in keys if searcher.search(self._term("key", key), 1, count=False).hits}

    def document_count(self) -> int:
        return int(self._index.searcher().num_docs)

    def close(self) -> None:
        """Release the writer's lock (the index stays on disk)."""
        self.release_writer()

    def _commit(self) -> None:
        """Commit the pending changes; if that fails (a full disk), drop them, so the writer does not
        carry a half-applied batch into the next commit, and re-raise."""
        try:
            self._writer.commit()
        except Exception:
            self._writer.rollback()
            raise
        self._index.reload()

    def _as_tantivy(self, document: Document) -> tantivy.Document:
        scope = document.scope
        return tantivy.Document(
            key=document.key,
            text=document.full_text,
            own_text=document.text,
            tenant_id=scope.tenant_id,
            agent_id=scope.agent_id,
            archive_id=scope.archive_id,
            conversation_id=scope.conversation_id,
            kind=str(document.kind),
            role=document.role,
            tags=list(document.tags),
            created_us=to_micros(document.created_at),
        )

    def _filter_query(self, flt: DocumentFilter) -> tantivy.Query:
        clauses = [self._term("tenant_id", flt.tenant_id)]
        for name, values in (
            ("agent_id", flt.agent_ids),
            ("archive_id", flt.archive_ids),
            ("conversation_id", flt.conversation_ids),
            ("kind", tuple(str(kind) for kind in flt.kinds)),
            ("role", flt.roles),
        ):
            if values:
                clauses.append(tantivy.Query.term_set_query(self._schema, name, list(values)))
        if flt.tags and flt.tag_match is TagMatch.ALL:
            clauses.extend(self._term("tags", tag) for tag in flt.tags)
        elif flt.tags:
            clauses.append(tantivy.Query.term_set_query(self._schema, "tags", list(flt.tags)))
        if flt.created_from is not None or flt.created_to is not None:
            low = to_micros(flt.created_from) if flt.created_from else None
            high = to_micros(flt.created_to) if flt.created_to else None
            clauses.append(
                tantivy.Query.range_query(self._schema, "created_us", tantivy.FieldType.Integer, low, high)
            )
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, clause) for clause in clauses])

    def _term(self, field_name: str, value: str) -> tantivy.Query:
        return tantivy.Query.term_query(self._schema, field_name, value)

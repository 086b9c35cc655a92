"""The purge's pure rules: target names, the receipt's store order, and the read-back verdict."""

from __future__ import annotations

import pytest

from strata_memory.domain.purge import STORES, PurgeKind, PurgeTarget, Tally, ordered_counts, verdict


def test_a_target_is_named_kind_slash_id_and_a_conversation_with_its_agent() -> None:
    assert PurgeTarget(PurgeKind.MESSAGE, "message-1").name == "message/message-1"
    assert PurgeTarget(PurgeKind.CONVERSATION, "c1", agent_id="agent-1").name == "conversation/agent-1/c1"


def test_every_store_is_reported_in_order_with_zero_for_those_that_held_nothing() -> None:
    tally = Tally()
    tally.add("messages", 3)
    tally.add("messages", 2)
    tally.add("text_leg", -1)  # a count never goes below zero
    counts = ordered_counts(tally.counts)
    assert [store for store, _ in counts] == list(STORES)
    assert dict(counts)["messages"] == 5
    assert dict(counts)["text_leg"] == 0
    assert sum(deleted for _, deleted in counts) == 5
    with pytest.raises(ValueError, match="unknown store"):
        tally.add("caches", 1)


def test_only_purged_ids_still_held_make_a_receipt_unverified() -> None:
    assert verdict(["m-1", "m-2"], vector_ids=["other"], text_ids=[]) == (True, (), "")
    verified, remaining, note = verdict(["m-1", "m-2"], vector_ids=["m-2"], text_ids=["m-1", "m-2"])
    assert (verified, remaining) == (False, ("m-1", "m-2"))
    assert note.startswith("2 purged document(s)")
    assert verdict([], [], []) == (True, (), "")

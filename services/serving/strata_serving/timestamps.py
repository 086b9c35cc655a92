"""Reading ``google.protobuf.Timestamp`` fields from requests: an invalid one is the caller's error.

``Timestamp.ToDatetime`` raises a bare ``ValueError`` for seconds outside years 1-9999 or nanos
outside [0, 1e9); found by fuzzing, that surfaced as INTERNAL. These helpers check first.
"""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from strata_serving.errors import InvalidArgument

_MIN_SECONDS = -62_135_596_800  # 0001-01-01T00:00:00Z
_MAX_SECONDS = 253_402_300_799  # 9999-12-31T23:59:59Z


def checked(stamp: Timestamp, field: str) -> Timestamp:
    """``stamp`` if it is a valid timestamp, else INVALID_ARGUMENT naming ``field``."""
    if not _MIN_SECONDS <= stamp.seconds <= _MAX_SECONDS:
        raise InvalidArgument.field(field, "seconds must be within years 1 to 9999")
    if not 0 <= stamp.nanos < 1_000_000_000:
        raise InvalidArgument.field(field, "nanos must be in [0, 999999999]")
    return stamp


def to_datetime(stamp: Timestamp, field: str) -> datetime:
    return checked(stamp, field).ToDatetime(tzinfo=UTC)


def to_micros(stamp: Timestamp, field: str) -> int:
    return checked(stamp, field).ToMicroseconds()

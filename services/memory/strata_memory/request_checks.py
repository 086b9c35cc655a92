"""MemoryService's reasons for the request rules every call obeys (:mod:`strata_serving.request_checks`).

- A NUL character in any string field is refused with INVALID_ARGUMENT, reason ``NUL_CHARACTER``,
  naming the field. Stripping it silently (as Letta does) would store something other than what
  the caller sent.
- An enum value the proto does not define is refused with reason ``UNKNOWN_ENUM_VALUE``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from google.protobuf.descriptor import ServiceDescriptor

from strata_serving import request_checks
from strata_serving.errors import InvalidArgument

T = TypeVar("T")


class NulCharacter(InvalidArgument):
    default_reason = "NUL_CHARACTER"


class UnknownEnumValue(InvalidArgument):
    default_reason = "UNKNOWN_ENUM_VALUE"


REFUSALS = request_checks.Refusals(nul_character=NulCharacter, unknown_enum_value=UnknownEnumValue)


def checked_requests(service: ServiceDescriptor) -> Callable[[type[T]], type[T]]:
    """Every RPC of ``service`` the decorated class implements checks its request first."""
    return request_checks.checked_requests(service, REFUSALS)

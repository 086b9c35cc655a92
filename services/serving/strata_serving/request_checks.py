"""Rules a service applies to every request, whatever the RPC, before its servicer runs.

- **No NUL character in any string field**, nested, repeated or a map key (PostgreSQL ``text``
  cannot hold one, and no text Strata stores needs it).
- **No enum value the proto does not define**: proto3 keeps unknown numbers, so ``tag_match = 9``
  arrives as a plain int. (Whether UNSPECIFIED is allowed stays the servicer's call, per field.)

The walk is driven by the descriptors, so a field added to a proto is covered without a change
here. Each violation is refused with the error class the service passes in (each service's API
names its own reasons), naming the field: ``blocks[0].value``, ``block.metadata['k']``. Well-known
types (timestamps, field masks, Empty) are left to their own parsers.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from google.protobuf.descriptor import FieldDescriptor, ServiceDescriptor
from google.protobuf.message import Message

from strata_serving.errors import InvalidArgument

T = TypeVar("T")
_WELL_KNOWN = "google.protobuf."


@dataclass(frozen=True)
class Refusals:
    """The errors a service raises for each rule (INVALID_ARGUMENT with its API's reason)."""

    nul_character: type[InvalidArgument]
    unknown_enum_value: type[InvalidArgument]


def check_request(request: Message, refusals: Refusals) -> None:
    """Raise the refusal for the first field of ``request`` that breaks a rule."""
    for path, field, value in _scalars(request, "", refusals):
        if field.type == FieldDescriptor.TYPE_STRING and "\x00" in value:
            raise refusals.nul_character.field(path, "must not contain a NUL character (U+0000)")
        enum = field.enum_type
        if enum is not None and value not in enum.values_by_number:
            known = ", ".join(f"{v.number} ({v.name})" for v in enum.values)
            raise refusals.unknown_enum_value.field(path, f"must be one of {known}, got {value}")


def _scalars(message: Message, prefix: str, refusals: Refusals) -> Iterator[tuple[str, FieldDescriptor, Any]]:
    """(path, field, value) for every string or enum value set in ``message``, nested ones too."""
    for field, value in message.ListFields():
        path = f"{prefix}{field.name}"
        nested = field.message_type
        if nested is not None and nested.GetOptions().map_entry:
            yield from _map_entries(path, nested.fields_by_name["value"], value, refusals)
        elif nested is not None:
            if nested.full_name.startswith(_WELL_KNOWN):
                continue
            items = enumerate(value) if field.is_repeated else [(None, value)]
            for index, item in items:
                yield from _scalars(item, f"{path}{'' if index is None else f'[{index}]'}.", refusals)
        elif field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_ENUM):
            if field.is_repeated:
                yield from ((f"{path}[{i}]", field, item) for i, item in enumerate(value))
            else:
                yield path, field, value


def _map_entries(
    path: str, value_field: FieldDescriptor, entries: Any, refusals: Refusals
) -> Iterator[tuple[str, FieldDescriptor, Any]]:
    for key, value in entries.items():
        where = f"{path}[{key!r}]"
        if isinstance(key, str) and "\x00" in key:
            raise refusals.nul_character.field(path, "keys must not contain a NUL character (U+0000)")
        if isinstance(value, Message):
            yield from _scalars(value, f"{where}.", refusals)
        elif value_field.type in (FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_ENUM):
            yield where, value_field, value


def checked_requests(service: ServiceDescriptor, refusals: Refusals) -> Callable[[type[T]], type[T]]:
    """A class decorator: every RPC of ``service`` the class implements checks its request first."""

    def decorate(cls: type[T]) -> type[T]:
        for method in service.methods:
            handler = getattr(cls, method.name, None)
            if handler is not None:
                setattr(cls, method.name, _guarded(handler, refusals))
        return cls

    return decorate


def _guarded(handler: Callable[..., Any], refusals: Refusals) -> Callable[..., Any]:
    if inspect.isasyncgenfunction(handler):

        @functools.wraps(handler)
        async def streaming(self: Any, request: Message, context: Any) -> AsyncIterator[Any]:
            check_request(request, refusals)
            async for item in handler(self, request, context):
                yield item

        return streaming

    @functools.wraps(handler)
    async def unary(self: Any, request: Message, context: Any) -> Any:
        check_request(request, refusals)
        return await handler(self, request, context)

    return unary

"""Reflection that answers with the contract's comments, so `grpcurl describe` shows them.

Generated ``_pb2`` modules register descriptors without source info, so reflection alone serves bare
types. ``make proto`` also writes ``strata/contract/contract_source.binpb`` (every Strata .proto compiled with
``--include_source_info``); :func:`commented_pool` wraps the default pool so each Strata file is
served with its comments (without that file, without them). It also resolves a method's full name,
which ``grpcurl describe pkg.Service.Method`` asks for and the pool alone does not know.
"""

from __future__ import annotations

import importlib.resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FileDescriptor

SOURCE_PACKAGE = "strata.contract"
SOURCE_FILE = "contract_source.binpb"


def load_sources() -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """The Strata files with their source info, by file name ({} when the file is not installed)."""
    try:
        data = (importlib.resources.files(SOURCE_PACKAGE) / SOURCE_FILE).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError):
        return {}
    return {f.name: f for f in descriptor_pb2.FileDescriptorSet.FromString(data).file}


class _CommentedFile:
    """A file descriptor as reflection uses it (name, dependencies, CopyToProto), plus its comments."""

    def __init__(self, descriptor: FileDescriptor, sources: dict[str, descriptor_pb2.FileDescriptorProto]):
        self._descriptor = descriptor
        self._sources = sources
        self.name = descriptor.name

    @property
    def dependencies(self) -> list[_CommentedFile]:
        return [_CommentedFile(d, self._sources) for d in self._descriptor.dependencies]

    def CopyToProto(self, proto: descriptor_pb2.FileDescriptorProto) -> None:  # noqa: N802  (reflection's name)
        self._descriptor.CopyToProto(proto)
        source = self._sources.get(self.name)
        if source is not None:
            proto.source_code_info.CopyFrom(source.source_code_info)


class CommentedPool:
    """The lookups grpc_reflection makes, answered by ``pool`` with Strata files' comments added."""

    def __init__(
        self, pool: descriptor_pool.DescriptorPool, sources: dict[str, descriptor_pb2.FileDescriptorProto]
    ):
        self._pool = pool
        self._sources = sources

    def FindFileByName(self, name: str) -> _CommentedFile:  # noqa: N802
        return _CommentedFile(self._pool.FindFileByName(name), self._sources)

    def FindFileContainingSymbol(self, symbol: str) -> _CommentedFile:  # noqa: N802
        """The file defining ``symbol``; a method's full name (``pkg.Service.Method``) is a symbol
        too, as the reflection protocol says, though the pool itself resolves only the service."""
        try:
            return _CommentedFile(self._pool.FindFileContainingSymbol(symbol), self._sources)
        except KeyError:
            service_name, _, method = symbol.rpartition(".")
            service = self._pool.FindServiceByName(service_name)  # KeyError: NOT_FOUND, as before
            if method not in service.methods_by_name:
                raise
            return _CommentedFile(service.file, self._sources)

    def __getattr__(self, name: str) -> Any:  # FindMessageTypeByName, FindExtensionByNumber, ...
        return getattr(self._pool, name)


def commented_pool() -> CommentedPool:
    """The default pool, with comments when the sources are installed, resolving method symbols."""
    return CommentedPool(descriptor_pool.Default(), load_sources())

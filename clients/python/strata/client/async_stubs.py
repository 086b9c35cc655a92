"""The ``grpc.aio`` stub types of the three services, under one name each for code and annotations.

The generated ``*AsyncStub`` classes exist only in the ``.pyi`` files (for type checkers); at run
time a ``grpc.aio`` channel is given to the plain ``*Stub`` class. Import ``MemoryStub``,
``RetrievalStub`` or ``AdminStub`` from here instead of repeating that ``TYPE_CHECKING`` switch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strata.admin.v1 import admin_pb2_grpc
from strata.memory.v1 import memory_service_pb2_grpc
from strata.retrieval.v1 import retrieval_pb2_grpc

if TYPE_CHECKING:
    MemoryStub = memory_service_pb2_grpc.MemoryServiceAsyncStub
    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceAsyncStub
    AdminStub = admin_pb2_grpc.AdminServiceAsyncStub
else:
    MemoryStub = memory_service_pb2_grpc.MemoryServiceStub
    RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub
    AdminStub = admin_pb2_grpc.AdminServiceStub

__all__ = ["AdminStub", "MemoryStub", "RetrievalStub"]

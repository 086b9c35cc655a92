"""Server reflection in both protocol versions: ``grpc.reflection.v1`` and ``grpc.reflection.v1alpha``.

grpcio-reflection implements only v1alpha; v1 (what grpcurl 1.9+, Postman and newer tools ask
first) has the same messages, field for field, under another package name. So one servicer answers
both: v1alpha through the library's registration, v1 through a generic handler on the same method
with the same (wire-identical) messages. Both list both names, and answer from
:func:`strata_serving.reflection_comments.commented_pool` (the contract's comments, method symbols).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha._async import ReflectionServicer

from strata_serving.reflection_comments import commented_pool

V1ALPHA_SERVICE = reflection.SERVICE_NAME
V1_SERVICE = "grpc.reflection.v1.ServerReflection"


def enable_reflection(server: grpc.aio.Server, service_names: Sequence[str]) -> None:
    """Serve reflection v1 and v1alpha on ``server``, listing ``service_names`` and themselves."""
    names = [*service_names, V1ALPHA_SERVICE, V1_SERVICE]
    servicer = ReflectionServicer(names, pool=cast(Any, commented_pool()))
    reflection_pb2_grpc.add_ServerReflectionServicer_to_server(servicer, server)
    v1 = grpc.method_handlers_generic_handler(
        V1_SERVICE,
        {
            "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
                servicer.ServerReflectionInfo,
                request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
                response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((v1,))

"""Which tenant a call acts for.

Until API keys land, the tenant is named by the ``x-strata-tenant`` metadata key ("default" when
absent). Every store query is scoped by it, so one tenant never sees another's resources.
"""

from __future__ import annotations

import re
from typing import Any

import grpc

from strata_serving.errors import InvalidArgument

TENANT_KEY = "x-strata-tenant"
DEFAULT_TENANT = "default"
_TENANT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def tenant_of(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == TENANT_KEY:
            tenant = value if isinstance(value, str) else value.decode()
            if not _TENANT_PATTERN.fullmatch(tenant):
                raise InvalidArgument.field(
                    TENANT_KEY, "must be 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit"
                )
            return tenant
    return DEFAULT_TENANT

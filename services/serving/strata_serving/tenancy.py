"""Which tenant a call acts for.

With auth on, the tenant is the one the caller's API key belongs to (see :mod:`strata_serving.auth`);
an ``x-strata-tenant`` header naming any other tenant is refused (PERMISSION_DENIED), and a non-tenant
principal (admin, service) may not act for a tenant at all. With auth off (the local default), the
tenant is named by the ``x-strata-tenant`` metadata key ("default" when absent). Every store query is
scoped by it, so one tenant never sees another's resources.
"""

from __future__ import annotations

import re
from typing import Any

import grpc

from strata_serving.auth import PrincipalKind, current_principal
from strata_serving.errors import InvalidArgument, PermissionDenied

TENANT_KEY = "x-strata-tenant"
DEFAULT_TENANT = "default"
TENANT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
TENANT_RULE = "must be 1-128 letters, digits, '_', '.' or '-', starting with a letter or digit"


def tenant_of(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    named = _named_tenant(context)
    principal = current_principal()
    if principal is None:
        return named or DEFAULT_TENANT
    if principal.kind is not PrincipalKind.TENANT or principal.tenant is None:
        raise PermissionDenied(f"a {principal.kind} key cannot act for a tenant", reason="WRONG_PRINCIPAL")
    if named is not None and named != principal.tenant:
        raise PermissionDenied(
            f"{TENANT_KEY} names another tenant than the API key's", reason="TENANT_MISMATCH"
        )
    return principal.tenant


def _named_tenant(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == TENANT_KEY:
            tenant = value if isinstance(value, str) else value.decode()
            if not TENANT_PATTERN.fullmatch(tenant):
                raise InvalidArgument.field(TENANT_KEY, TENANT_RULE)
            return tenant
    return None

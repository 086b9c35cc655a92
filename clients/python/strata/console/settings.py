"""The console's settings, read from ``STRATA_CONSOLE_*`` environment variables.

``STRATA_CONSOLE_HOST`` / ``_PORT``: where it listens (127.0.0.1:8080).
``STRATA_CONSOLE_MEMORY_TARGET``: MemoryService (``STRATA_MEMORY_TARGET``, else 127.0.0.1:50051);
replicas as ``ipv4:HOST:PORT,HOST:PORT``. ``STRATA_CONSOLE_RETRIEVAL_TARGET``: RetrievalService, for
health and document counts on the operations page (127.0.0.1:50052), with
``STRATA_CONSOLE_RETRIEVAL_API_KEY`` when it requires one.
``STRATA_CONSOLE_AUTH``: ``true`` when MemoryService requires API keys: every page then needs a
sign-in with a key. Off (the default, as ``make run`` serves), pages act as
``STRATA_CONSOLE_TENANT`` (sent as ``x-strata-tenant``, the server's "default" when unset), as the CLI does.
``STRATA_CONSOLE_SESSION_MINUTES``: how long a sign-in lasts (480).
``STRATA_CONSOLE_SECURE_COOKIE``: mark the session cookie ``Secure`` (behind HTTPS).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from strata.client.arguments import DEFAULT_RETRIEVAL_TARGET, DEFAULT_TARGET, TARGET_ENV

PREFIX = "STRATA_CONSOLE_"
TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off", ""})


@dataclass(frozen=True)
class ConsoleSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    memory_target: str = DEFAULT_TARGET
    retrieval_target: str = DEFAULT_RETRIEVAL_TARGET
    retrieval_api_key: str | None = None
    auth: bool = False
    tenant: str | None = None
    session_minutes: int = 480
    secure_cookie: bool = False
    timeout: float = 10.0

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> ConsoleSettings:
        """Settings from ``STRATA_CONSOLE_*`` (a bad value raises ``ValueError`` naming the variable)."""
        env = os.environ if environ is None else environ

        def text(name: str, default: str | None) -> str | None:
            return env.get(PREFIX + name, default) or default

        return cls(
            host=text("HOST", cls.host) or cls.host,
            port=_number(env, "PORT", cls.port),
            memory_target=text("MEMORY_TARGET", env.get(TARGET_ENV) or DEFAULT_TARGET) or DEFAULT_TARGET,
            retrieval_target=text("RETRIEVAL_TARGET", DEFAULT_RETRIEVAL_TARGET) or DEFAULT_RETRIEVAL_TARGET,
            retrieval_api_key=text("RETRIEVAL_API_KEY", None),
            auth=_flag(env, "AUTH", cls.auth),
            tenant=text("TENANT", None),
            session_minutes=_number(env, "SESSION_MINUTES", cls.session_minutes),
            secure_cookie=_flag(env, "SECURE_COOKIE", cls.secure_cookie),
            timeout=float(_number(env, "TIMEOUT", int(cls.timeout))),
        )


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(PREFIX + name)
    if raw is None:
        return default
    if raw.strip().lower() in TRUE:
        return True
    if raw.strip().lower() in FALSE:
        return False
    raise ValueError(f"{PREFIX}{name} must be true or false, not {raw!r}")


def _number(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(PREFIX + name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{PREFIX}{name} must be a whole number, not {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{PREFIX}{name} must be positive, not {value}")
    return value

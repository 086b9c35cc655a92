"""``strata console``: a server-rendered web console over MemoryService's public gRPC API.

Pages are rendered by Starlette + Jinja2 from calls made with :mod:`strata.client`; the console
holds no data of its own beyond sign-in sessions, and imports no service package.
"""

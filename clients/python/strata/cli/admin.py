"""``strata admin create-key|list-keys|revoke-key``: tenant API keys, with the admin key as ``--api-key``."""

from __future__ import annotations

import argparse

from strata.admin.v1 import admin_pb2
from strata.cli.commands import Subparsers, command, group
from strata.cli.output import Printer, timestamp
from strata.client import AdminClient, MemoryClient


def register(subparsers: Subparsers) -> None:
    admin = group(subparsers, "admin", "API keys (needs the admin key: --api-key or STRATA_API_KEY)")
    create = command(admin, "create-key", "mint a key for a tenant; prints its secret once", _create)
    create.add_argument("--tenant", dest="key_tenant", metavar="TENANT", required=True)
    create.add_argument("--name", dest="display_name", default="", help="a note on who holds the key")
    listing = command(admin, "list-keys", "keys newest first (never their secrets)", _list)
    listing.add_argument(
        "--tenant", dest="key_tenant", metavar="TENANT", default="", help="only this tenant's"
    )
    listing.add_argument("--revoked", action="store_true", help="include revoked keys")
    revoke = command(admin, "revoke-key", "revoke a key: calls with it fail from now on", _revoke)
    revoke.add_argument("key_id", metavar="KEY_ID")


def _admin(client: MemoryClient, args: argparse.Namespace) -> AdminClient:
    return AdminClient(
        client.target, timeout=args.timeout, api_key=args.api_key, credentials=args.credentials
    )


def _create(client: MemoryClient, args: argparse.Namespace, printer: Printer) -> None:
    with _admin(client, args) as admin:
        created = admin.create_api_key(tenant_id=args.key_tenant, display_name=args.display_name)
    printer.show(
        created,
        lambda: printer.fields(
            [
                ("key id", created.api_key.key_id),
                ("tenant", created.api_key.tenant_id),
                ("secret", created.secret),
            ]
        ),
    )


def _list(client: MemoryClient, args: argparse.Namespace, printer: Printer) -> None:
    with _admin(client, args) as admin:
        keys = list(admin.iter_api_keys(tenant_id=args.key_tenant, show_revoked=args.revoked))
    printer.show(
        admin_pb2.ListApiKeysResponse(api_keys=keys),
        lambda: printer.table(
            ["KEY ID", "TENANT", "NAME", "CREATED", "REVOKED"],
            [
                (k.key_id, k.tenant_id, k.display_name, timestamp(k.create_time), timestamp(k.revoke_time))
                for k in keys
            ],
        ),
    )


def _revoke(client: MemoryClient, args: argparse.Namespace, printer: Printer) -> None:
    with _admin(client, args) as admin:
        key = admin.revoke_api_key(key_id=args.key_id)
    printer.show(key, lambda: printer.line(f"revoked {key.key_id} ({key.tenant_id})"))

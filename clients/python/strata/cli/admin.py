"""``strata admin create-key|list-keys|revoke-key|list-parked|retry-parked``: tenant API keys and parked
index jobs, with the admin key as ``--api-key``."""

from __future__ import annotations

import argparse

from strata.admin.v1 import admin_pb2
from strata.cli.commands import Subparsers, command, group
from strata.cli.output import Printer, timestamp
from strata.client import AdminClient, MemoryClient


def register(subparsers: Subparsers) -> None:
    admin = group(
        subparsers, "admin", "API keys, parked index jobs (needs the admin key: --api-key or STRATA_API_KEY)"
    )
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
    parked = command(admin, "list-parked", "index jobs the outbox parked, with reason and attempts", _parked)
    parked.add_argument(
        "--tenant", dest="job_tenant", metavar="TENANT", default="", help="only this tenant's"
    )
    retry = command(admin, "retry-parked", "put parked index jobs back into delivery", _retry)
    retry.add_argument("--tenant", dest="job_tenant", metavar="TENANT", default="", help="only this tenant's")
    retry.add_argument("job_ids", metavar="JOB_ID", type=int, nargs="*", help="only these (default: all)")


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


def _parked(client: MemoryClient, args: argparse.Namespace, printer: Printer) -> None:
    with _admin(client, args) as admin:
        jobs = list(admin.iter_parked_index_jobs(tenant_id=args.job_tenant))
    printer.show(
        admin_pb2.ListParkedIndexJobsResponse(jobs=jobs),
        lambda: printer.table(
            ["JOB", "TENANT", "ACTION", "DOCUMENT", "AGENT/ARCHIVE", "ATTEMPTS", "PARKED", "REASON"],
            [
                (
                    str(j.job_id),
                    j.tenant_id,
                    j.action,
                    j.document_id,
                    j.agent_id or j.archive_id,
                    str(j.attempts),
                    timestamp(j.park_time),
                    j.reason,
                )
                for j in jobs
            ],
        ),
    )


def _retry(client: MemoryClient, args: argparse.Namespace, printer: Printer) -> None:
    with _admin(client, args) as admin:
        retried = admin.retry_parked_index_jobs(tenant_id=args.job_tenant, job_ids=args.job_ids)
    printer.show(retried, lambda: printer.line(f"{retried.retried_count} parked index jobs back in delivery"))

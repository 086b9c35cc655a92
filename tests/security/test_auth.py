"""API keys and tenant isolation through real servers: who may call what, and what they can see."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from strata.admin.v1 import admin_pb2 as admin
from strata.admin.v1 import admin_pb2_grpc
from strata.client import AsyncMemoryClient, NotFoundError, UnauthenticatedError
from strata.client.async_stubs import AdminStub, MemoryStub, RetrievalStub
from strata.memory.v1 import memory_service_pb2 as api
from strata.memory.v1 import memory_service_pb2_grpc
from strata.memory.v1 import resources_pb2 as pb
from strata.retrieval.v1 import retrieval_pb2 as rpb
from strata.retrieval.v1 import retrieval_pb2_grpc
from strata_serving.auth import hash_secret, split_key
from tests.hermetic import memory_settings
from tests.memory.integration.conftest import expect_error
from tests.security.conftest import ADMIN_KEY, SERVICE_KEY, bearer, create_key
from tests.servers import ServicePair


def memory_stub(channel: grpc.aio.Channel) -> MemoryStub:
    return memory_service_pb2_grpc.MemoryServiceStub(channel)


def admin_stub(channel: grpc.aio.Channel) -> AdminStub:
    return admin_pb2_grpc.AdminServiceStub(channel)


async def test_calls_without_a_valid_key_are_unauthenticated(channel: grpc.aio.Channel) -> None:
    stub = memory_stub(channel)
    request = api.ListAgentsRequest()
    await expect_error(stub.ListAgents(request), grpc.StatusCode.UNAUTHENTICATED, "MISSING_CREDENTIALS")
    for token in ("nonsense-token", "sk_0123456789abcdef_wrong-secret", ""):
        metadata = bearer(token) if token else (("authorization", "Bearer  "),)
        reason = "INVALID_CREDENTIALS" if token else "MALFORMED_CREDENTIALS"
        await expect_error(
            stub.ListAgents(request, metadata=metadata), grpc.StatusCode.UNAUTHENTICATED, reason
        )
    basic = (("authorization", "Basic dXNlcjpwYXNz"),)
    await expect_error(stub.ListAgents(request, metadata=basic), grpc.StatusCode.UNAUTHENTICATED)


async def test_a_wrong_secret_for_a_real_key_id_is_refused(channel: grpc.aio.Channel) -> None:
    token = await create_key(channel, "acme")
    parts = split_key(token)
    assert parts is not None
    forged = f"sk_{parts[0]}_{'A' * len(parts[1])}"
    await expect_error(
        memory_stub(channel).ListAgents(api.ListAgentsRequest(), metadata=bearer(forged)),
        grpc.StatusCode.UNAUTHENTICATED,
        "INVALID_CREDENTIALS",
    )


async def test_tenants_see_only_their_own_resources(channel: grpc.aio.Channel) -> None:
    stub = memory_stub(channel)
    acme, globex = await create_key(channel, "acme"), await create_key(channel, "globex")
    agent = await stub.CreateAgent(
        api.CreateAgentRequest(agent=pb.Agent(name="acme-bot")), metadata=bearer(acme)
    )
    block = await stub.GetBlock(
        api.GetBlockRequest(block=pb.BlockRef(agent_id=agent.id, label="persona")), metadata=bearer(acme)
    )
    mine = await stub.ListAgents(api.ListAgentsRequest(), metadata=bearer(acme))
    theirs = await stub.ListAgents(api.ListAgentsRequest(), metadata=bearer(globex))
    assert [a.id for a in mine.agents] == [agent.id]
    assert list(theirs.agents) == []
    await expect_error(
        stub.GetAgent(api.GetAgentRequest(agent_id=agent.id), metadata=bearer(globex)),
        grpc.StatusCode.NOT_FOUND,
    )
    await expect_error(
        stub.DeleteAgent(api.DeleteAgentRequest(agent_id=agent.id), metadata=bearer(globex)),
        grpc.StatusCode.NOT_FOUND,
    )
    await expect_error(
        stub.GetBlock(api.GetBlockRequest(block=pb.BlockRef(block_id=block.id)), metadata=bearer(globex)),
        grpc.StatusCode.NOT_FOUND,
    )
    await stub.GetAgent(api.GetAgentRequest(agent_id=agent.id), metadata=bearer(acme))


async def test_the_tenant_header_cannot_override_the_key(channel: grpc.aio.Channel) -> None:
    stub = memory_stub(channel)
    acme = await create_key(channel, "acme")
    spoofed = (*bearer(acme), ("x-strata-tenant", "globex"))
    await expect_error(
        stub.ListAgents(api.ListAgentsRequest(), metadata=spoofed),
        grpc.StatusCode.PERMISSION_DENIED,
        "TENANT_MISMATCH",
    )
    matching = (*bearer(acme), ("x-strata-tenant", "acme"))
    await stub.ListAgents(api.ListAgentsRequest(), metadata=matching)


async def test_admin_rpcs_need_the_admin_key(channel: grpc.aio.Channel) -> None:
    acme = await create_key(channel, "acme")
    stub = admin_stub(channel)
    await expect_error(
        stub.ListApiKeys(admin.ListApiKeysRequest(), metadata=bearer(acme)),
        grpc.StatusCode.PERMISSION_DENIED,
        "WRONG_PRINCIPAL",
    )
    await expect_error(stub.ListApiKeys(admin.ListApiKeysRequest()), grpc.StatusCode.UNAUTHENTICATED)
    # ...and the admin key is not a tenant: it cannot read anyone's memory.
    await expect_error(
        memory_stub(channel).ListAgents(api.ListAgentsRequest(), metadata=bearer(ADMIN_KEY)),
        grpc.StatusCode.PERMISSION_DENIED,
    )


async def test_revoked_keys_stop_working_and_secrets_are_stored_hashed(
    stack: ServicePair, channel: grpc.aio.Channel
) -> None:
    stub, admins = memory_stub(channel), admin_stub(channel)
    token = await create_key(channel, "acme")
    other = await create_key(channel, "acme")
    await stub.ListAgents(api.ListAgentsRequest(), metadata=bearer(token))
    key_id, secret = split_key(token) or ("", "")
    listed = await admins.ListApiKeys(admin.ListApiKeysRequest(tenant_id="acme"), metadata=bearer(ADMIN_KEY))
    assert {k.key_id for k in listed.api_keys} == {key_id, (split_key(other) or ("", ""))[0]}
    assert token not in str(listed)
    revoked = await admins.RevokeApiKey(admin.RevokeApiKeyRequest(key_id=key_id), metadata=bearer(ADMIN_KEY))
    assert revoked.HasField("revoke_time")
    await expect_error(
        stub.ListAgents(api.ListAgentsRequest(), metadata=bearer(token)),
        grpc.StatusCode.UNAUTHENTICATED,
        "INVALID_CREDENTIALS",
    )
    await stub.ListAgents(api.ListAgentsRequest(), metadata=bearer(other))  # rotation: the new key works
    active = await admins.ListApiKeys(admin.ListApiKeysRequest(tenant_id="acme"), metadata=bearer(ADMIN_KEY))
    assert key_id not in {k.key_id for k in active.api_keys}
    await expect_error(
        admins.RevokeApiKey(admin.RevokeApiKeyRequest(key_id="nope"), metadata=bearer(ADMIN_KEY)),
        grpc.StatusCode.NOT_FOUND,
    )
    database = Path(str(stack.root / "memory.sqlite3"))
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT key_id, secret_sha256 FROM api_keys").fetchall()
    stored = dict(rows)
    assert stored[key_id] == hash_secret(secret)
    raw = await asyncio.to_thread(database.read_bytes)
    assert secret.encode() not in raw


async def test_create_api_key_validates_the_tenant(channel: grpc.aio.Channel) -> None:
    stub = admin_stub(channel)
    for tenant in ("", "-bad", "x" * 129, "white space"):
        await expect_error(
            stub.CreateApiKey(admin.CreateApiKeyRequest(tenant_id=tenant), metadata=bearer(ADMIN_KEY)),
            grpc.StatusCode.INVALID_ARGUMENT,
        )


async def test_health_and_reflection_need_no_key(stack: ServicePair) -> None:
    for address in (stack.memory_address, stack.retrieval_address):
        async with grpc.aio.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            response = await health.Check(health_pb2.HealthCheckRequest(service=""))
            assert response.status == health_pb2.HealthCheckResponse.SERVING


async def test_retrieval_serves_only_the_service_key_and_needs_a_tenant(
    stack: ServicePair, channel: grpc.aio.Channel
) -> None:
    tenant_key = await create_key(channel, "acme")
    search = rpb.SearchRequest(
        query="x", mode=rpb.SEARCH_MODE_HYBRID, top_k=5, filter=rpb.DocumentFilter(tenant_id="acme")
    )
    async with grpc.aio.insecure_channel(stack.retrieval_address) as retrieval_channel:
        stub: RetrievalStub = retrieval_pb2_grpc.RetrievalServiceStub(retrieval_channel)
        await expect_error(stub.Search(search), grpc.StatusCode.UNAUTHENTICATED)
        await expect_error(stub.Search(search, metadata=bearer(tenant_key)), grpc.StatusCode.UNAUTHENTICATED)
        await expect_error(stub.Search(search, metadata=bearer(ADMIN_KEY)), grpc.StatusCode.UNAUTHENTICATED)
        await stub.Search(search, metadata=bearer(SERVICE_KEY))
        unscoped = rpb.SearchRequest(query="x", mode=rpb.SEARCH_MODE_HYBRID, top_k=5)
        await expect_error(
            stub.Search(unscoped, metadata=bearer(SERVICE_KEY)), grpc.StatusCode.INVALID_ARGUMENT
        )
        upsert = rpb.UpsertDocumentsRequest(documents=[rpb.Document(id="d1", text="hello")])
        await expect_error(
            stub.UpsertDocuments(upsert, metadata=bearer(SERVICE_KEY)), grpc.StatusCode.INVALID_ARGUMENT
        )


async def archival_hits(stub: MemoryStub, token: str, agent_id: str, query: str) -> list[str]:
    response = await stub.SearchArchival(
        api.SearchArchivalRequest(agent_id=agent_id, query=query, top_k=5), metadata=bearer(token)
    )
    return [hit.passage.text for hit in response.hits]


async def test_search_goes_through_retrieval_as_the_service_scoped_to_the_tenant(
    channel: grpc.aio.Channel,
) -> None:
    stub = memory_stub(channel)
    acme, globex = await create_key(channel, "acme"), await create_key(channel, "globex")
    agents = {}
    for token, text in (
        (acme, "Acme keeps the launch codes in the blue safe."),
        (globex, "Globex likes tea."),
    ):
        agent = await stub.CreateAgent(
            api.CreateAgentRequest(agent=pb.Agent(name="bot")), metadata=bearer(token)
        )
        await stub.CreatePassages(
            api.CreatePassagesRequest(
                agent_id=agent.id, passages=[pb.Passage(text=text)], wait_searchable=True
            ),
            metadata=bearer(token),
        )
        agents[token] = agent.id
    assert await archival_hits(stub, acme, agents[acme], "launch codes safe") == [
        "Acme keeps the launch codes in the blue safe."
    ]
    assert await archival_hits(stub, globex, agents[globex], "launch codes safe") == ["Globex likes tea."]
    await expect_error(
        stub.SearchArchival(
            api.SearchArchivalRequest(agent_id=agents[acme], query="codes"), metadata=bearer(globex)
        ),
        grpc.StatusCode.NOT_FOUND,
    )


async def test_a_wrong_service_key_makes_search_unavailable_with_a_clear_message(stack: ServicePair) -> None:
    await stack.stop_memory()
    await stack.start_memory(retrieval_api_key="not-the-service-key-at-all")
    async with grpc.aio.insecure_channel(stack.memory_address) as channel:
        token = await create_key(channel, "acme")
        stub = memory_stub(channel)
        agent = await stub.CreateAgent(
            api.CreateAgentRequest(agent=pb.Agent(name="bot")), metadata=bearer(token)
        )
        passages = [pb.Passage(text="kept even though indexing is refused")]
        await stub.CreatePassages(
            api.CreatePassagesRequest(agent_id=agent.id, passages=passages), metadata=bearer(token)
        )
        error = await expect_error(
            stub.SearchArchival(
                api.SearchArchivalRequest(agent_id=agent.id, query="q"), metadata=bearer(token)
            ),
            grpc.StatusCode.UNAVAILABLE,
        )
        assert "refused MemoryService's credentials" in (error.details() or "")


async def test_the_client_sends_the_api_key_from_its_argument_or_the_environment(
    stack: ServicePair, channel: grpc.aio.Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = await create_key(channel, "acme")
    async with AsyncMemoryClient(stack.memory_address, api_key=token) as client:
        agent = await client.create_agent(agent=pb.Agent(name="from-client"))
    monkeypatch.setenv("STRATA_API_KEY", token)
    async with AsyncMemoryClient(stack.memory_address) as client:
        assert (await client.get_agent(agent_id=agent.id)).name == "from-client"
    monkeypatch.setenv("STRATA_API_KEY", "sk_0000000000000000_bogus")
    async with AsyncMemoryClient(stack.memory_address) as client:
        with pytest.raises(UnauthenticatedError):
            await client.get_agent(agent_id=agent.id)
    other = await create_key(channel, "globex")
    async with AsyncMemoryClient(stack.memory_address, api_key=other) as client:
        with pytest.raises(NotFoundError):
            await client.get_agent(agent_id=agent.id)


async def test_logs_never_contain_keys_or_memory_text(
    channel: grpc.aio.Channel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    token = await create_key(channel, "acme")
    stub = memory_stub(channel)
    secret_text = "my bank PIN is 4921"
    agent = await stub.CreateAgent(api.CreateAgentRequest(agent=pb.Agent(name="bot")), metadata=bearer(token))
    await stub.AppendMessages(
        api.AppendMessagesRequest(
            agent_id=agent.id, messages=[pb.Message(role=pb.MESSAGE_ROLE_USER, content=secret_text)]
        ),
        metadata=bearer(token),
    )
    await expect_error(
        stub.ListAgents(api.ListAgentsRequest(), metadata=bearer(token + "x")),
        grpc.StatusCode.UNAUTHENTICATED,
    )
    await expect_error(
        stub.ListAgents(api.ListAgentsRequest(), metadata=bearer(ADMIN_KEY)),
        grpc.StatusCode.PERMISSION_DENIED,
    )
    last = "rpc /strata.memory.v1.MemoryService/ListAgents code=PERMISSION_DENIED"
    deadline = asyncio.get_running_loop().time() + 10
    while not any(last in record.getMessage() for record in caplog.records):  # logged after the reply
        assert asyncio.get_running_loop().time() < deadline, "the last call was never logged"
        await asyncio.sleep(0.01)
    text = "\n".join(record.getMessage() + repr(record.__dict__) for record in caplog.records)
    assert "rpc /strata.memory.v1.MemoryService/AppendMessages code=OK" in text
    for leaked in (token, ADMIN_KEY, SERVICE_KEY, secret_text, (split_key(token) or ("", ""))[1]):
        assert leaked not in text


async def test_without_auth_the_admin_service_is_absent(tmp_path: Path) -> None:
    from strata_memory.main import start_memory_server

    server = await start_memory_server(memory_settings(tmp_path / "m.sqlite3"))
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            await expect_error(
                admin_stub(channel).ListApiKeys(admin.ListApiKeysRequest()), grpc.StatusCode.UNIMPLEMENTED
            )
            await memory_stub(channel).ListAgents(
                api.ListAgentsRequest(), metadata=(("x-strata-tenant", "t1"),)
            )
    finally:
        await server.stop(0)


async def test_an_admin_key_alone_guards_admin_rpcs_and_leaves_memory_open(tmp_path: Path) -> None:
    from strata_memory.main import start_memory_server

    settings = memory_settings(tmp_path / "m.sqlite3", admin_api_key=ADMIN_KEY)
    server = await start_memory_server(settings)
    try:
        async with grpc.aio.insecure_channel(server.address) as channel:
            await expect_error(
                admin_stub(channel).ListApiKeys(admin.ListApiKeysRequest()), grpc.StatusCode.UNAUTHENTICATED
            )
            await admin_stub(channel).ListApiKeys(admin.ListApiKeysRequest(), metadata=bearer(ADMIN_KEY))
            await memory_stub(channel).ListAgents(api.ListAgentsRequest())
    finally:
        await server.stop(0)


async def test_reindexing_every_tenant_needs_the_admin_key(channel: grpc.aio.Channel) -> None:
    stub = memory_stub(channel)
    acme = await create_key(channel, "acme")
    everyone = api.ReindexRequest(all_tenants=True)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        async for _ in stub.Reindex(everyone, metadata=bearer(acme)):
            pass
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert refused.value.details() == "all_tenants needs the admin key"
    progress = [p async for p in stub.Reindex(everyone, metadata=bearer(ADMIN_KEY))]
    assert progress[-1].done
    own = [p async for p in stub.Reindex(api.ReindexRequest(), metadata=bearer(acme))]
    assert own[-1].done

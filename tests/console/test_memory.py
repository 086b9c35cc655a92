"""Agents and their memory through a real browser: create, edit, conflicts, refusals, prompt, history.

Auth off: the console acts as its own tenant; the API calls that race the person (a concurrent edit)
are made with the same tenant through strata.client.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from strata.client import MemoryClient
from strata.memory.v1 import resources_pb2 as pb
from tests.console.browsing import accessible, screenshot
from tests.console.conftest import ConsoleServer


@pytest.fixture
def api(open_console: ConsoleServer) -> Iterator[MemoryClient]:
    """A direct client of the console's tenant: what another person or an agent does meanwhile."""
    with MemoryClient(open_console.memory, tenant=open_console.tenant, timeout=10) as client:
        yield client


def new_agent(page: Page, console: ConsoleServer, name: str) -> str:
    """Create an agent through the agents page; returns its id (the page it lands on)."""
    page.goto(console.url + "/agents")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_role("button", name="Create agent").click()
    page.wait_for_url(re.compile(r"/agents/agent-"))
    return page.url.rsplit("/", 1)[1].split("#")[0]


def save_block(page: Page, label: str, value: str) -> None:
    page.get_by_label(f"Value of {label}").fill(value)
    page.get_by_role("button", name=f"Save {label}").click()


def test_create_agent_edit_block_and_recompile_the_stale_prompt(
    page: Page, open_console: ConsoleServer, api: MemoryClient
) -> None:
    agent_id = new_agent(page, open_console, "ada")
    expect(page.get_by_role("heading", name=re.compile("ada"))).to_be_visible()
    expect(page.locator("meter")).to_have_count(2)  # persona and human, each with its budget
    accessible(page)
    screenshot(page, "memory")

    save_block(page, "human", "Name: Grace Hopper\nLikes: compilers")
    expect(page.get_by_label("Value of human")).to_have_value("Name: Grace Hopper\nLikes: compilers")
    assert api.get_block(agent_id=agent_id, label="human").value == "Name: Grace Hopper\nLikes: compilers"

    page.get_by_role("link", name="Prompt").click()
    prompt = api.get_system_prompt(agent_id=agent_id)
    expected = "stale" if prompt.stale else "up to date"
    expect(page.locator(".marker").first).to_have_text(expected)
    if not prompt.stale:  # an agent that recompiles on edit: make memory change behind its back
        api.update_agent(
            agent=pb.Agent(id=agent_id, recompile_policy=pb.RECOMPILE_POLICY_EXPLICIT),
            update_mask=["recompile_policy"],
        )
        api.update_block(
            block=pb.Block(value="Name: Grace"), update_mask=["value"], agent_id=agent_id, label="human"
        )
        page.reload()
    expect(page.locator(".marker.stale")).to_have_text("stale")
    accessible(page)
    screenshot(page, "prompt")

    page.get_by_role("link", name="Recompile…").click()
    expect(page.get_by_role("heading", name=re.compile("Recompile preview"))).to_be_visible()
    expect(page.locator(".diff .add").first).to_be_visible()
    assert api.get_system_prompt(agent_id=agent_id).stale  # the preview saved nothing
    accessible(page)
    screenshot(page, "prompt-preview")
    page.get_by_role("button", name="Recompile now").click()
    expect(page.locator(".marker.fresh")).to_have_text("up to date")
    assert not api.get_system_prompt(agent_id=agent_id).stale
    page.get_by_role("link", name="line-numbered", exact=True).click()
    expect(page.get_by_label("Memory rendered in line_numbered mode")).to_contain_text("1→ Name: Grace")
    page.get_by_role("link", name="git", exact=True).click()  # no system/* block: nothing to project
    expect(page.locator("#rendered-empty")).to_contain_text("only system/* blocks")
    page.get_by_role("link", name="standard", exact=True).click()
    expect(page.get_by_label("Memory rendered in standard mode")).to_contain_text("<memory_blocks>")


def test_agents_list_search_paging_and_delete_with_confirmation(
    page: Page, open_console: ConsoleServer, api: MemoryClient
) -> None:
    for index in range(22):
        api.create_agent(agent=pb.Agent(name=f"pager-{index:02d}"))
    page.goto(open_console.url + "/agents")
    expect(page.get_by_role("link", name="Next page")).to_be_visible()
    accessible(page)
    screenshot(page, "agents")

    page.get_by_label("Search by name or id").fill("pager-1")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("tbody tr")).to_have_count(10)  # pager-10 .. pager-19
    target = api.create_agent(agent=pb.Agent(name="doomed"))
    page.goto(open_console.url + f"/agents?q={target.id}")
    page.get_by_role("link", name="Delete doomed").click()
    accessible(page)
    screenshot(page, "delete-agent")
    api.update_agent(agent=pb.Agent(id=target.id, name="doomed-renamed"), update_mask=["name"])
    page.get_by_role("button", name="Delete agent").click()  # the confirmed state changed: refused
    expect(page.locator(".refusal")).to_contain_text("ABORTED")
    assert api.get_agent(agent_id=target.id).name == "doomed-renamed"
    page.get_by_role("button", name="Delete agent").click()  # confirmed again, on the new state
    page.wait_for_url(open_console.url + "/agents")
    assert not [a for a in api.list_agents(page_size=1000).agents if a.id == target.id]


def test_a_concurrent_api_edit_shows_both_versions_and_lets_the_person_choose(
    page: Page, open_console: ConsoleServer, api: MemoryClient
) -> None:
    agent_id = new_agent(page, open_console, "racer")
    api.update_block(
        block=pb.Block(value="one\ntwo\nthree"), update_mask=["value"], agent_id=agent_id, label="human"
    )
    page.reload()
    api.update_block(  # someone else saves while the page is open
        block=pb.Block(value="one\ntwo\nthree\nfour (theirs)"),
        update_mask=["value"],
        agent_id=agent_id,
        label="human",
    )
    save_block(page, "human", "ONE (mine)\ntwo\nthree")
    conflict = page.locator(".conflict")
    expect(conflict).to_contain_text("Someone changed this block")
    expect(conflict.locator(".del")).to_contain_text(["-one", "-four (theirs)"])
    expect(conflict.locator(".add")).to_contain_text(["+ONE (mine)"])
    assert (
        api.get_block(agent_id=agent_id, label="human").value == "one\ntwo\nthree\nfour (theirs)"
    )  # untouched
    accessible(page)
    screenshot(page, "conflict")

    conflict.get_by_role("button", name="Merge line by line").click()  # both changes, merged by the service
    expect(page.get_by_label("Value of human")).to_have_value("ONE (mine)\ntwo\nthree\nfour (theirs)")

    page.reload()
    api.update_block(
        block=pb.Block(value="theirs again"), update_mask=["value"], agent_id=agent_id, label="human"
    )
    save_block(page, "human", "mine at last")
    page.locator(".conflict").get_by_role("button", name="Keep mine").click()
    expect(page.get_by_label("Value of human")).to_have_value("mine at last")
    assert api.get_block(agent_id=agent_id, label="human").value == "mine at last"


def test_budget_and_read_only_refusals_show_the_services_message(
    page: Page, open_console: ConsoleServer, api: MemoryClient
) -> None:
    agent_id = new_agent(page, open_console, "budget")
    page.get_by_label("Label").fill("notes")
    page.get_by_label("Value", exact=True).fill("short")
    page.get_by_label("Limit (characters, optional)").fill("20")
    page.get_by_role("button", name="Create block").click()
    save_block(page, "notes", "x" * 21)
    refusal = page.locator("#block-" + api.get_block(agent_id=agent_id, label="notes").id + " .refusal")
    expect(refusal).to_contain_text("FAILED_PRECONDITION")
    expect(refusal).to_contain_text("over its limit of 20")
    expect(page.get_by_label("Value of notes")).to_have_value("x" * 21)  # the draft stays in the form
    assert api.get_block(agent_id=agent_id, label="notes").value == "short"  # nothing saved
    accessible(page)
    screenshot(page, "budget-refusal")
    notes = "#block-" + api.get_block(agent_id=agent_id, label="notes").id
    expect(page.locator(f"{notes} .budget")).to_have_class(re.compile("budget-ok"))
    for value, level in (("x" * 16, "budget-warn"), ("x" * 19, "budget-full")):  # 80 %, 95 % of 20
        save_block(page, "notes", value)
        expect(page.locator(f"{notes} .budget")).to_have_class(re.compile(level))
        expect(page.locator(f"{notes} meter")).to_have_attribute("value", str(len(value)))

    api.create_block(
        block=pb.Block(label="policy", value="Never share secrets.", read_only=True), agent_id=agent_id
    )
    page.goto(open_console.url + f"/agents/{agent_id}/tools")
    page.get_by_label("Tool", exact=True).select_option("memory_replace")
    page.get_by_label("Arguments (JSON object)").fill(
        '{"label": "policy", "old_string": "Never", "new_string": "Always"}'
    )
    page.get_by_role("button", name="Run tool").click()
    result = page.locator(".result")
    expect(result).to_contain_text("false")
    expect(result).to_contain_text("read-only")
    assert api.get_block(agent_id=agent_id, label="policy").value == "Never share secrets."
    accessible(page)
    screenshot(page, "tool-refusal")

    page.get_by_label("Arguments (JSON object)").fill(
        '{"label": "human", "old_string": "", "new_string": "Prefers tea."}'
    )
    page.get_by_label("Tool", exact=True).select_option("memory_insert")
    page.get_by_label("Arguments (JSON object)").fill('{"label": "human", "new_string": "Prefers tea."}')
    page.get_by_role("button", name="Run tool").click()
    expect(page.locator(".result")).to_contain_text("true")
    expect(page.locator(".diff .add")).to_contain_text(["Prefers tea."])
    accessible(page)
    screenshot(page, "tools")

    page.get_by_label("Arguments (JSON object)").fill("[1, 2]")
    page.get_by_role("button", name="Run tool").click()
    expect(page.locator("#arguments-error")).to_contain_text("JSON object")


def test_history_diff_and_restore(page: Page, open_console: ConsoleServer, api: MemoryClient) -> None:
    agent_id = new_agent(page, open_console, "historian")
    for value in ("first draft", "second draft", "third draft"):
        api.update_block(block=pb.Block(value=value), update_mask=["value"], agent_id=agent_id, label="human")
    block = api.get_block(agent_id=agent_id, label="human")
    page.goto(open_console.url + f"/agents/{agent_id}")
    page.locator(f"#block-{block.id}").get_by_role("link", name="history").click()
    expect(page.locator("tbody tr")).to_have_count(block.version)
    expect(page.locator(".diff .del")).to_contain_text(["-second draft"])
    expect(page.locator(".diff .add")).to_contain_text(["+third draft"])
    expect(page.locator("tbody")).to_contain_text("api:UpdateBlock")
    accessible(page)
    screenshot(page, "history")

    page.get_by_label("Compare version").select_option(str(block.version - 2))
    page.get_by_role("button", name="Show diff").click()
    expect(page.locator(".diff .del")).to_contain_text(["-first draft"])

    page.get_by_role("button", name=f"Restore version {block.version - 2}").click()
    expect(page.locator("tbody tr").first).to_contain_text(f"{block.version + 1} (current)")
    assert api.get_block(agent_id=agent_id, label="human").value == "first draft"

    page.goto(page.url)  # a stale restore (the block changed since the page was shown) is refused
    api.update_block(
        block=pb.Block(value="moved on"), update_mask=["value"], agent_id=agent_id, label="human"
    )
    page.get_by_role("button", name=f"Restore version {block.version}").click()
    expect(page.locator(".refusal")).to_contain_text("ABORTED")
    assert api.get_block(agent_id=agent_id, label="human").value == "moved on"


def test_create_attach_and_detach_blocks_with_shared_markers(
    page: Page, open_console: ConsoleServer, api: MemoryClient
) -> None:
    other = api.create_agent(agent=pb.Agent(name="teammate"))
    shared = api.create_block(block=pb.Block(label="team", value="We ship on Fridays."), agent_id=other.id)
    agent_id = new_agent(page, open_console, "joiner")

    page.get_by_label("Block id").fill(shared.id)
    page.get_by_role("button", name="Attach block").click()
    section = page.locator(f"#block-{shared.id}")
    expect(section.locator(".marker.shared")).to_contain_text("teammate")
    assert shared.id in [b.id for b in api.list_blocks(agent_id=agent_id).blocks]

    page.get_by_label("Block id").fill("block-00000000-0000-0000-0000-000000000000")
    page.get_by_role("button", name="Attach block").click()
    expect(page.locator("#attach-error")).to_contain_text("NOT_FOUND")

    page.get_by_label("Label").fill("rules")
    page.get_by_label("Value", exact=True).fill("Be kind.")
    page.get_by_label("Read-only for the agent's tools").check()
    page.get_by_role("button", name="Create block").click()
    rules = api.get_block(agent_id=agent_id, label="rules")
    assert rules.read_only
    expect(page.locator(f"#block-{rules.id} .marker.ro")).to_have_text("read-only")

    page.get_by_label("Label").fill("rules")  # a second block of that label: the service refuses it
    page.get_by_role("button", name="Create block").click()
    expect(page.locator("#new-label-error")).to_contain_text("ALREADY_EXISTS")
    expect(page.get_by_label("Label")).to_have_value("rules")

    page.locator(f"#block-{shared.id}").get_by_role("button", name="Detach team").click()
    expect(page.locator(f"#block-{shared.id}")).to_have_count(0)
    assert shared.id not in [b.id for b in api.list_blocks(agent_id=agent_id).blocks]
    assert shared.id in [b.id for b in api.list_blocks(agent_id=other.id).blocks]


def tab_to(page: Page, name: str, presses: int = 60) -> None:
    """Press Tab until the focused element's accessible label or text is ``name``."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            "() => { const e = document.activeElement;"
            " return (e.labels && e.labels[0] ? e.labels[0].textContent : e.textContent || '').trim(); }"
        )
        if focused == name:
            return
    raise AssertionError(f"{name!r} is not reachable with Tab")


def test_a_block_can_be_edited_with_the_keyboard_alone(
    page: Page, open_console: ConsoleServer, api: MemoryClient
) -> None:
    agent_id = new_agent(page, open_console, "keys")
    page.goto(page.url)
    tab_to(page, "Skip to content", presses=1)  # the first stop skips the navigation
    page.keyboard.press("Enter")
    tab_to(page, "Value of human")
    page.keyboard.type("Typed without a mouse.")
    tab_to(page, "Save human")
    page.keyboard.press("Enter")
    expect(page.get_by_label("Value of human")).to_have_value("Typed without a mouse.")
    assert api.get_block(agent_id=agent_id, label="human").value == "Typed without a mouse."

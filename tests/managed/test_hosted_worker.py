"""A self-hosted environment's tool calls on OUR instance: the real ``anthropic`` client against the
Managed Agents fake, the scripted hosted agent calling bash/read/write/edit/glob/grep, and
:func:`praisonai.managed.hosted._worker.serving` running them on a real docker instance through
the SDK's session tool runner. Each ``user.tool_result`` carries what the container answered.

Every wait is on something the fake or the instance shows (an event, a file); no timings.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, cast

import anthropic
import anyio
import pytest
from anthropic import Anthropic, AsyncAnthropic
from fakes.managed_agents import API_KEY, ManagedAgentsFake, Step, custom_tool, end_turn, tool

from praisonai import AsyncSandbox, ConfigError, Sandbox
from praisonai._errors import AuthenticationError
from praisonai.managed.hosted._worker import agent_tools, serving
from praisonai.managed.instance._tools import InstanceTools

TOOLSET = {"type": "agent_toolset_20260401"}
CUSTOM = {"type": "custom", "name": "lookup", "description": "look a word up",
          "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}  # fmt: skip
Body = Callable[[AsyncAnthropic, InstanceTools, AsyncSandbox], Awaitable[None]]


@pytest.fixture(scope="module")
def box(docker_ok: None) -> Iterator[Sandbox]:
    """One docker instance for the module (removed afterwards, even on failure)."""
    with Sandbox.create("docker", environment=False) as sandbox:
        yield sandbox


def drive(box: Sandbox, fake: ManagedAgentsFake, body: Body) -> None:
    """Run ``body`` on a new event loop with a client on the fake and tools whose working dir is a
    new directory of the instance; afterwards no task of the loop is left."""

    async def main() -> None:
        asb = await AsyncSandbox.connect(box.id, type(box.provider).from_options(box.provider.options))
        client = AsyncAnthropic(base_url=fake.url, api_key=API_KEY, max_retries=0, timeout=60)
        try:
            name = f"w-{uuid.uuid4().hex[:8]}"
            await asb.exec(["mkdir", name], check=True)
            await body(client, InstanceTools(asb, f"/workspace/{name}"), asb)
        finally:
            await client.close()
            await asb.close()  # borrowed: lets go only
        await asyncio.sleep(0)  # lets asyncio finish closing a stream's iterator left by a break
        assert asyncio.all_tasks() == {asyncio.current_task()}

    anyio.run(main)


async def self_hosted(client: AsyncAnthropic, fake: ManagedAgentsFake, steps: list[Step],
                      env_id: str | None = None) -> tuple[str, str]:  # fmt: skip
    """A session (and a self_hosted environment unless given) playing ``steps``: (env id, session id)."""
    agent = await client.beta.agents.create(name="coder", model="claude-sonnet-4-6", tools=[TOOLSET, CUSTOM])
    if env_id is None:
        env = await client.beta.environments.create(name=f"own-{uuid.uuid4().hex[:6]}",
                                                    config={"type": "self_hosted"})  # fmt: skip
        env_id = env.id
    session = await client.beta.sessions.create(agent=agent.id, environment_id=env_id)
    fake.script_session(session.id, steps)
    return env_id, session.id


def user(text: str) -> dict[str, Any]:
    return {"type": "user.message", "content": [{"type": "text", "text": text}]}


async def turn(
    client: AsyncAnthropic, sid: str, answer: Callable[[list[str]], list[Any]] | None = None
) -> None:
    """Stream first, send a message, read until the turn ends; ``answer(event_ids)`` gives what
    resolves a ``requires_action`` (as the turn loop would: confirmations, custom tool results)."""
    stream = await client.beta.sessions.events.stream(sid)
    async with stream:
        await client.beta.sessions.events.send(sid, events=[user("go")])  # type: ignore[list-item]
        async for ev in stream:
            if ev.type != "session.status_idle":
                continue
            if ev.stop_reason.type != "requires_action":
                return
            assert answer is not None
            await client.beta.sessions.events.send(sid, events=answer(ev.stop_reason.event_ids))


def results(fake: ManagedAgentsFake, sid: str) -> list[tuple[str, str, bool]]:
    """(tool name, text, is_error) of each ``user.tool_result``, in the order posted."""
    log = fake.events(sid)
    names = {e["id"]: e["name"] for e in log if e["type"] == "agent.tool_use"}
    return [(names[e["tool_use_id"]], "".join(b["text"] for b in e["content"]), e["is_error"])
            for e in log if e["type"] == "user.tool_result"]  # fmt: skip


def allowed(name: str, **args: Any) -> Step:
    return tool(name, args, permission="allow")


def test_the_toolset_has_the_apis_names_and_input_schemas() -> None:
    tools = agent_tools(InstanceTools(cast(AsyncSandbox, None)))  # the schemas need no instance
    schemas = {t.name: t.to_dict()["input_schema"] for t in tools}
    assert list(schemas) == ["bash", "read", "write", "edit", "glob", "grep"]
    assert set(schemas["bash"]["properties"]) == {"command", "restart", "timeout_ms"}
    assert set(schemas["read"]["properties"]) == {"file_path", "view_range"}
    assert set(schemas["edit"]["properties"]) == {"file_path", "old_string", "new_string", "replace_all"}
    assert set(schemas["grep"]["properties"]) == {"pattern", "path"}


def test_each_tool_call_runs_in_the_container(box: Sandbox, fake: ManagedAgentsFake) -> None:
    steps = [allowed("bash", command="echo hi; exit 3"),
             allowed("write", file_path="notes/a.txt", content="alpha\nbeta\n"),
             allowed("read", file_path="notes/a.txt"),
             allowed("edit", file_path="notes/a.txt", old_string="beta", new_string="gamma"),
             allowed("read", file_path="notes/a.txt", view_range=[2, 2]),
             allowed("glob", pattern="**/*.txt"),
             allowed("grep", pattern="gam+a"),
             allowed("bash", command="cat notes/a.txt"),
             end_turn()]  # fmt: skip

    async def body(client: AsyncAnthropic, tools: InstanceTools, asb: AsyncSandbox) -> None:
        env_id, sid = await self_hosted(client, fake, steps)
        async with serving(client, environment_id=env_id, session_id=sid, tools=tools):
            await turn(client, sid)
        got = results(fake, sid)
        names = ["bash", "write", "read", "edit", "read", "glob", "grep", "bash"]
        assert [name for name, _, _ in got] == names
        (_, bash, bash_err), (_, wrote, w_err), (_, read, r_err), (_, edited, e_err) = got[:4]
        assert bash_err and "hi" in bash and "exit 3" in bash
        assert not w_err and "11 bytes" in wrote
        assert not r_err and read == "alpha\nbeta\n"
        assert not e_err and "Replaced 1 occurrence" in edited
        (_, line, _), (_, globbed, g_err), (_, grepped, gr_err), (_, cat, c_err) = got[4:]
        assert line == "gamma"
        assert not g_err and globbed.endswith("notes/a.txt")
        assert not gr_err and "a.txt:2:gamma" in grepped
        assert not c_err and cat == "alpha\ngamma"  # the command's output, its last newline dropped
        assert await asb.read_file(f"{tools.working_dir}/notes/a.txt") == b"alpha\ngamma\n"
        assert fake.session(sid)["status"] == "idle"

    drive(box, fake, body)


def test_a_path_outside_the_workspace_is_an_error_result(box: Sandbox, fake: ManagedAgentsFake) -> None:
    steps = [allowed("write", file_path="../escape.txt", content="x"),
             allowed("read", file_path="/etc/hostname"),
             allowed("edit", file_path="/etc/hosts", old_string="localhost", new_string="x"),
             allowed("glob", pattern="/etc/*"),
             allowed("glob", pattern="../**"),
             allowed("grep", pattern="root", path="/etc"),
             end_turn()]  # fmt: skip

    async def body(client: AsyncAnthropic, tools: InstanceTools, asb: AsyncSandbox) -> None:
        env_id, sid = await self_hosted(client, fake, steps)
        hosts = await asb.read_file("/etc/hosts")
        async with serving(client, environment_id=env_id, session_id=sid, tools=tools):
            await turn(client, sid)
        got = results(fake, sid)
        assert len(got) == 6 and all(is_error for _, _, is_error in got), got
        assert all("outside the workspace" in text or "'..'" in text for _, text, _ in got), got
        assert (await asb.exec(["test", "-e", "/workspace/escape.txt"])).exit_code == 1
        assert await asb.read_file("/etc/hosts") == hosts

    drive(box, fake, body)


def test_another_sessions_call_is_not_run_by_us(box: Sandbox, fake: ManagedAgentsFake) -> None:
    async def body(client: AsyncAnthropic, tools: InstanceTools, asb: AsyncSandbox) -> None:
        marker = f"{tools.working_dir}/other-ran"
        env_id, other = await self_hosted(client, fake, [allowed("bash", command=f"touch {marker}")])
        _, mine = await self_hosted(client, fake, [allowed("bash", command="echo mine"), end_turn()], env_id)
        await client.beta.sessions.events.send(other, events=[user("go")])  # type: ignore[list-item]
        assert fake.wait_until(lambda: any(e["type"] == "agent.tool_use" for e in fake.events(other)))
        async with serving(client, environment_id=env_id, session_id=mine, tools=tools):
            await turn(client, mine)
        assert results(fake, mine) == [("bash", "mine", False)]
        assert results(fake, other) == []
        assert fake.session(other)["status"] == "running"  # still waiting for its own runner
        assert (await asb.exec(["test", "-e", marker])).exit_code == 1

    drive(box, fake, body)


def test_confirmed_calls_run_denied_ones_and_custom_tools_are_left_to_the_turn(
    box: Sandbox, fake: ManagedAgentsFake
) -> None:
    async def body(client: AsyncAnthropic, tools: InstanceTools, asb: AsyncSandbox) -> None:
        denied = f"{tools.working_dir}/denied-ran"
        steps = [custom_tool("lookup", {"q": "x"}), tool("bash", {"command": "echo asked"}),
                 tool("bash", {"command": f"touch {denied}"}), end_turn()]  # fmt: skip
        env_id, sid = await self_hosted(client, fake, steps)

        def answer(ids: list[str]) -> list[Any]:
            custom, allow, deny = ids
            return [{"type": "user.custom_tool_result", "custom_tool_use_id": custom,
                     "content": [{"type": "text", "text": "found"}]},
                    {"type": "user.tool_confirmation", "tool_use_id": allow, "result": "allow"},
                    {"type": "user.tool_confirmation", "tool_use_id": deny, "result": "deny"}]  # fmt: skip

        async with serving(client, environment_id=env_id, session_id=sid, tools=tools):
            await turn(client, sid, answer)
        assert results(fake, sid) == [("bash", "asked", False)]
        customs = [e for e in fake.events(sid) if e["type"] == "user.custom_tool_result"]
        assert len(customs) == 1  # the turn's own answer: the runner posts none for a custom tool
        assert (await asb.exec(["test", "-e", denied])).exit_code == 1

    drive(box, fake, body)


def test_an_api_refusal_ends_the_block_with_the_error(box: Sandbox, fake: ManagedAgentsFake) -> None:
    async def body(client: AsyncAnthropic, tools: InstanceTools, asb: AsyncSandbox) -> None:
        env_id, sid = await self_hosted(client, fake, [end_turn()])
        fake.fail(401, on="events.stream")
        with pytest.raises(AuthenticationError, match="refused the API key"):
            async with serving(client, environment_id=env_id, session_id=sid, tools=tools):
                await anyio.sleep_forever()  # the runner's failure cancels the block

    drive(box, fake, body)


def test_the_blocks_own_error_comes_out_as_is(box: Sandbox, fake: ManagedAgentsFake) -> None:
    async def body(client: AsyncAnthropic, tools: InstanceTools, asb: AsyncSandbox) -> None:
        env_id, sid = await self_hosted(client, fake, [end_turn()])
        with pytest.raises(ValueError, match="the turn failed"):
            async with serving(client, environment_id=env_id, session_id=sid, tools=tools):
                raise ValueError("the turn failed")
        with anyio.CancelScope() as outer:  # a cancellation from outside goes on out
            async with serving(client, environment_id=env_id, session_id=sid, tools=tools):
                outer.cancel()
                await anyio.sleep_forever()
        assert outer.cancelled_caught

    drive(box, fake, body)


def test_a_call_made_before_serving_began_is_run_on_entry(box: Sandbox, fake: ManagedAgentsFake) -> None:
    """As after a crash or a resume: the runner rebuilds the session from its log and runs the
    call the session still waits on."""

    async def body(client: AsyncAnthropic, tools: InstanceTools, asb: AsyncSandbox) -> None:
        env_id, sid = await self_hosted(client, fake, [allowed("bash", command="echo late"), end_turn()])
        await client.beta.sessions.events.send(sid, events=[user("go")])  # type: ignore[list-item]
        assert fake.wait_until(lambda: any(e["type"] == "agent.tool_use" for e in fake.events(sid)))
        stream = await client.beta.sessions.events.stream(sid)
        async with stream, serving(client, environment_id=env_id, session_id=sid, tools=tools):
            async for ev in stream:
                if ev.type == "session.status_idle":
                    break
        assert results(fake, sid) == [("bash", "late", False)]

    drive(box, fake, body)


def test_a_session_of_another_environment_is_refused(box: Sandbox, fake: ManagedAgentsFake) -> None:
    async def body(client: AsyncAnthropic, tools: InstanceTools, asb: AsyncSandbox) -> None:
        _, sid = await self_hosted(client, fake, [end_turn()])
        env_b, _ = await self_hosted(client, fake, [end_turn()])
        with pytest.raises(ConfigError, match="not env_"):
            async with serving(client, environment_id=env_b, session_id=sid, tools=tools):
                pass

    drive(box, fake, body)


def test_leaving_mid_call_stops_the_command(box: Sandbox, fake: ManagedAgentsFake) -> None:
    async def body(client: AsyncAnthropic, tools: InstanceTools, asb: AsyncSandbox) -> None:
        started = f"{tools.working_dir}/started"
        command = f"touch {started}; sleep 600"
        env_id, sid = await self_hosted(client, fake, [allowed("bash", command=command), end_turn()])
        async with serving(client, environment_id=env_id, session_id=sid, tools=tools):
            await client.beta.sessions.events.send(sid, events=[user("go")])  # type: ignore[list-item]
            with anyio.fail_after(120):  # a bound on a hang, not a timing: the command starts at once
                while (await asb.exec(["test", "-e", started])).exit_code != 0:
                    await anyio.sleep(0.05)
        [(name, text, is_error)] = results(fake, sid)
        assert name == "bash" and is_error and "was stopped" in text
        # its process is gone (-x: the name; -f would find this command's own `sh -c`)
        assert (await asb.exec(["pgrep", "-x", "sleep"])).exit_code == 1

    drive(box, fake, body)


def test_tool_result_is_refused_on_a_cloud_environment(fake: ManagedAgentsFake) -> None:
    with Anthropic(base_url=fake.url, api_key=API_KEY, max_retries=0, timeout=30) as c:
        agent = c.beta.agents.create(name="coder", model="claude-sonnet-4-6", tools=[TOOLSET])
        env = c.beta.environments.create(name="cloudy", config={"type": "cloud"})
        sid = c.beta.sessions.create(agent=agent.id, environment_id=env.id).id
        fake.script_session(sid, [allowed("bash", command="ls"), end_turn()])
        c.beta.sessions.events.send(sid, events=[user("go")])  # type: ignore[list-item]
        assert fake.wait_until(lambda: fake.session(sid)["status"] == "idle")
        [used] = [e for e in fake.events(sid) if e["type"] == "agent.tool_use"]
        answer = {"type": "user.tool_result", "tool_use_id": used["id"], "is_error": False,
                  "content": [{"type": "text", "text": "mine"}]}  # fmt: skip
        with pytest.raises(anthropic.BadRequestError, match="self_hosted"):
            c.beta.sessions.events.send(sid, events=[answer])  # type: ignore[list-item]

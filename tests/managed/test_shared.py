"""SharedCompute on real docker: one instance for a team, its tools, attach/restore and teardown."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from kit import Member

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError
from praisonai.compute.providers.docker import DockerCompute
from praisonai.managed import CAPABILITY_PROMPT, SharedCompute

pytestmark = pytest.mark.usefixtures("docker_ok")


class CountingDocker(DockerCompute):
    """The real docker provider, counting its provisions."""

    provisions = 0

    async def provision(self, config: object = None) -> Any:
        type(self).provisions += 1
        return await super().provision(config)


def tool(agent: Member, name: str) -> Callable[..., str]:
    return next(t for t in agent.tools if t.__name__ == name)


def gone(shared: SharedCompute, instance_id: str | None) -> bool:
    """``instance_id`` (read while it ran) no longer exists, and shutdown forgot it."""
    assert shared.provider is not None and instance_id is not None and shared.instance_id is None
    try:
        _portal.call(shared.provider.get_status, instance_id)
    except InstanceNotFoundError:
        return True
    return False


def test_what_one_agent_writes_the_next_reads_byte_exact() -> None:
    writer, reader = Member("writer"), Member("reader")
    # under the tool-result limit: a longer read comes back as head and tail (test_tool_set.py)
    content = "line one\n\ttabbed ✓ 'quotes' \"double\" $HOME `ticks`\nno newline at the end" * 300
    with SharedCompute(DockerCompute(), environment=False) as shared:
        shared.attach([writer, reader])
        assert (
            tool(writer, "write_file")("notes/out.txt", content)
            == f"Wrote {len(content.encode())} bytes to notes/out.txt"
        )
        assert tool(reader, "read_file")("notes/out.txt") == content
        assert tool(reader, "execute_command")("wc -c < notes/out.txt").strip() == str(len(content.encode()))
        assert "out.txt" in tool(reader, "list_files")("notes")
        actions = [(e.agent, e.action, e.target) for e in shared.audit]
        assert ("writer", "write_file", "notes/out.txt") in actions
        assert ("reader", "exec", "wc -c < notes/out.txt") in actions
        instance_id = shared.instance_id
    assert gone(shared, instance_id)


def test_tool_output_is_never_empty_and_errors_say_so() -> None:
    member = Member("solo")
    with SharedCompute(DockerCompute(), environment=False) as shared:
        shared.attach([member])
        run = tool(member, "execute_command")
        assert run("true") == "(no output)"
        assert run("echo out; echo err >&2; exit 3") == "Error (exit 3): out\nerr"
        assert run("sleep 30", timeout=1).startswith("Error (timed out after 1s)")
        assert run("echo still fine") == "still fine"  # the session survived the timeout
        assert tool(member, "read_file")("no/such/file").startswith("Error: ")
        run("mkdir -p empty")
        assert tool(member, "list_files")("empty") == "(empty directory)"
        assert tool(member, "write_file")("blank.txt", "") == "Wrote 0 bytes to blank.txt"
        assert tool(member, "read_file")("blank.txt") == "(empty file)"


def test_each_agent_has_its_own_shell_session() -> None:
    a, b = Member("a"), Member("b")
    with SharedCompute(DockerCompute(), environment=False) as shared:
        shared.attach([a, b])
        tool(a, "execute_command")("cd /tmp && export WHO=a")
        assert tool(a, "execute_command")('pwd; echo "$WHO"') == "/tmp\na"
        assert tool(b, "execute_command")('pwd; echo "[$WHO]"') == "/workspace\n[]"


def test_eight_parallel_first_calls_provision_once() -> None:
    CountingDocker.provisions = 0
    members = [Member(f"m{i}") for i in range(8)]
    outputs: dict[str, str] = {}
    with SharedCompute(CountingDocker(), environment=False) as shared:
        shared.attach(members)
        start = threading.Barrier(8)

        def first_call(member: Member) -> None:
            start.wait()
            outputs[member.name] = tool(member, "execute_command")(f"echo {member.name}")

        threads = [threading.Thread(target=first_call, args=(m,)) for m in members]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        instance_id = shared.instance_id
    assert CountingDocker.provisions == 1
    assert outputs == {m.name: m.name for m in members}
    assert gone(shared, instance_id)


def test_a_step_that_raises_still_tears_the_instance_down() -> None:
    member = Member("m")
    with (
        pytest.raises(RuntimeError, match="step failed"),
        SharedCompute(DockerCompute(), environment=False) as shared,
    ):
        shared.attach([member])
        tool(member, "execute_command")("true")
        instance_id = shared.instance_id
        raise RuntimeError("step failed")
    assert gone(shared, instance_id)
    shared.shutdown()  # idempotent


def test_attach_swaps_same_named_tools_adds_the_note_and_restores_everything() -> None:
    def read_file(path: str) -> str:
        """A local read_file that must be replaced while attached."""
        return "local"

    def search(query: str) -> str:
        """A local tool that stays."""
        return query

    member = Member("m", tools=[read_file, search], instructions="Be brief.")
    own_backend = Member("remote", tools=[search], backend=object())
    with SharedCompute(DockerCompute(), environment=False) as shared:
        shared.attach([member, own_backend])
        names = [t.__name__ for t in member.tools]
        assert names == ["read_file", "search", "execute_command", "write_file", "list_files"]
        assert member.tools[0] is not read_file and member.tools[1] is search
        assert member.instructions.startswith("Be brief.") and CAPABILITY_PROMPT in member.instructions
        assert own_backend.tools == [search] and CAPABILITY_PROMPT not in own_backend.instructions
        assert shared.instance_id is None, "attaching must not provision: the first tool call does"
    assert member.tools == [read_file, search] and member.instructions == "Be brief."

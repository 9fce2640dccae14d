"""SharedCompute's tools under parallel calls and big files, on real docker and local processes:
one agent's calls made together queue in one shell, each with its own output; a rejected command
leaves the session as it was; read_file hands the model at most its window and says how to page."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kit import Member

from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.providers.local import LocalCompute
from praisonai.managed import SharedCompute
from praisonai.managed.instance._answers import read_window


class CountingShells:
    """Counts the session shells a provider starts (through ``_session_transport``, where every
    channel provider starts one)."""

    shells = 0

    def _session_transport(self, instance_id: str, argv: list[str]) -> Any:
        if "praisonai-session" in argv:
            CountingShells.shells += 1
        return super()._session_transport(instance_id, argv)  # type: ignore[misc]


class CountingDocker(CountingShells, DockerCompute):
    pass


class CountingLocal(CountingShells, LocalCompute):
    pass


@pytest.fixture(params=["local", "docker"])
def team(request: pytest.FixtureRequest) -> Iterator[tuple[SharedCompute, Member]]:
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
    CountingShells.shells = 0
    member = Member("m")
    provider = CountingDocker() if request.param == "docker" else CountingLocal()
    with SharedCompute(provider, environment=False) as shared:
        shared.attach([member])
        yield shared, member


def tool(member: Member, name: str) -> Callable[..., str]:
    return next(t for t in member.tools if t.__name__ == name)


def in_parallel(calls: list[Callable[[], str]]) -> list[str]:
    """Start every call at the same moment, each on its own thread; their results in order."""
    start, results = threading.Barrier(len(calls)), [""] * len(calls)

    def one(i: int) -> None:
        start.wait()
        results[i] = calls[i]()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return results


def test_eight_parallel_calls_of_one_agent_open_one_shell_and_get_their_own_output(
    team: tuple[SharedCompute, Member],
) -> None:
    shared, member = team
    run = tool(member, "execute_command")

    def call(i: int) -> Callable[[], str]:
        return lambda: run(f"echo out-{i}; sleep 0.05; echo err-{i} >&2")

    for _ in range(2):  # first calls (the session does not exist yet), then a warm session
        assert in_parallel([call(i) for i in range(8)]) == [f"out-{i}\nerr-{i}" for i in range(8)]
    assert CountingShells.shells == 1
    assert len([e for e in shared.audit if e.action == "exec"]) == 16


def test_a_rejected_command_leaves_the_agent_session_as_it_was(team: tuple[SharedCompute, Member]) -> None:
    _, member = team
    run = tool(member, "execute_command")
    assert run("mkdir -p sub && cd sub && export KEEP=kept") == "(no output)"
    for bad, kwargs in (("echo a\0b", {}), ("echo \udcff", {}), ("touch ran", {"timeout": -1})):
        assert run(bad, **kwargs).startswith("Error: "), (bad, kwargs)
        assert run('pwd; echo "$KEEP"').endswith("/sub\nkept"), (bad, kwargs)
    assert run("ls ran 2>/dev/null || echo absent") == "absent"
    assert CountingShells.shells == 1


def test_read_file_hands_the_model_at_most_the_cap_and_says_how_to_page(
    team: tuple[SharedCompute, Member],
) -> None:
    _, member = team
    lines = "".join(f"line {i:07d} ✓\n" for i in range(200_000))  # 3.4 MB, multi-byte characters
    data = lines.encode()
    assert tool(member, "write_file")("big.txt", lines).startswith("Wrote ")
    read = tool(member, "read_file")

    whole = read("big.txt")
    assert len(whole.encode()) < read_window() + 300 and "\ufffd" not in whole
    assert whole.startswith("line 0000000 ✓\n") and whole.endswith("line 0199999 ✓\n")
    note = whole[whole.index("\n[... ") : whole.index(" ...]\n") + 6]
    head, tail = whole.split(note)
    offset = int(note.split("offset=")[1].split(",")[0])
    assert data.startswith(head.encode()) and data.endswith(tail.encode()) and offset == len(head.encode())

    end = offset + 1000
    while data[end] & 0xC0 == 0x80:  # a page never ends inside a character
        end -= 1
    more = f"\n[{len(data) - end} more bytes of {len(data)}: read_file('big.txt', offset={end})]"
    assert read("big.txt", offset=offset, limit=1000) == data[offset:end].decode() + more
    last = "line 0199999 ✓\n"
    assert read("big.txt", offset=len(data) - len(last.encode())) == last
    assert read("big.txt", offset=len(data)).startswith("Error: offset ")

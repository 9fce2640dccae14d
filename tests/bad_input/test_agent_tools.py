"""The agent tools given arguments a model may send by mistake: each returns one ``Error: …``
sentence (never raises, never runs anything), and the instance, the agent's shell session and the
audit log are exactly as before. On real local processes and docker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kit import Member

from praisonai import _portal
from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.providers.local import LocalCompute
from praisonai.managed import SharedCompute
from praisonai.managed.instance._answers import read_window

NAN, INF = float("nan"), float("inf")

# (tool, positional args, keyword args, fragment of the one-sentence error)
CASES: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("execute_command", (5,), {}, "command must be a string, not int"),
    ("execute_command", (None,), {}, "command must be a string, not NoneType"),
    ("execute_command", (["touch", "ran"],), {}, "command must be a string, not list"),
    ("execute_command", ("touch ran\udcff",), {}, "command is not valid text"),
    ("execute_command", ("touch ran\0",), {}, "NUL"),
    ("execute_command", ("touch ran",), {"timeout": -1}, "timeout must be a positive number"),
    ("execute_command", ("touch ran",), {"timeout": 0}, "timeout must be a positive number"),
    ("execute_command", ("touch ran",), {"timeout": NAN}, "timeout must be a positive number"),
    ("execute_command", ("touch ran",), {"timeout": INF}, "timeout must be a positive number"),
    ("execute_command", ("touch ran",), {"timeout": "5"}, "timeout must be a number of seconds, not '5'"),
    ("execute_command", ("touch ran",), {"timeout": True}, "timeout must be a number of seconds, not True"),
    ("execute_command", ("touch ran",), {"timeout": None}, "timeout must be a number of seconds, not None"),
    ("write_file", ("ran.txt", 5), {}, "content must be a string, not int"),
    ("write_file", ("ran.txt", b"bytes"), {}, "content must be a string, not bytes"),
    ("write_file", ("ran.txt", None), {}, "content must be a string, not NoneType"),
    ("write_file", ("ran.txt", "x\udcff"), {}, "content is not valid text"),
    ("write_file", ("ran\0.txt", "x"), {}, "without NUL"),
    ("write_file", ("ran\udcff.txt", "x"), {}, "path is not valid text"),
    ("write_file", ("", "x"), {}, "path must be a non-empty"),
    ("write_file", (5, "x"), {}, "path must be a string, not int"),
    ("read_file", ("keep.txt\0",), {}, "without NUL"),
    ("read_file", (5,), {}, "path must be a string, not int"),
    ("read_file", ("",), {}, "path must be a non-empty"),
    ("read_file", ("keep.txt",), {"offset": -1}, "offset must be a whole number 0 or more"),
    ("read_file", ("keep.txt",), {"offset": "1"}, "offset must be a whole number"),
    ("read_file", ("keep.txt",), {"offset": 1.5}, "offset must be a whole number"),
    ("read_file", ("keep.txt",), {"limit": 0}, f"limit must be a whole number from 1 to {read_window()}"),
    ("read_file", ("keep.txt",), {"limit": 2**21}, f"limit must be a whole number from 1 to {read_window()}"),
    ("read_file", ("keep.txt",), {"limit": True}, "limit must be a whole number"),
    ("read_file", ("keep.txt",), {"offset": 10**9}, "offset 1000000000 is at or past the end"),
    ("list_files", ("sub\0",), {}, "without NUL"),
    ("list_files", (7,), {}, "path must be a string, not int"),
]


@pytest.fixture(scope="module", params=["local", "docker"])
def team(request: pytest.FixtureRequest) -> Iterator[tuple[SharedCompute, Member]]:
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
    member = Member("careless")
    with SharedCompute(
        DockerCompute() if request.param == "docker" else LocalCompute(), environment=False
    ) as shared:
        shared.attach([member])
        run = tool(member, "execute_command")
        assert run("mkdir -p sub && cd sub && export KEEP=kept") == "(no output)"
        assert tool(member, "write_file")("keep.txt", "k") == "Wrote 1 bytes to keep.txt"
        yield shared, member


def tool(member: Member, name: str) -> Callable[..., str]:
    return next(t for t in member.tools if t.__name__ == name)


def snapshot(shared: SharedCompute, member: Member) -> tuple[int, str, str]:
    """The audit length, every file in the workspace with its size, and the session's state."""
    audited = len(shared.audit)
    assert shared.provider is not None and shared.instance_id is not None
    files = _portal.call(shared.provider.execute, shared.instance_id, "find . -printf '%p %s\\n' | sort")
    state = tool(member, "execute_command")('pwd; echo "$KEEP"')
    del shared.audit[audited:]  # the probe's own entry
    return audited, files.stdout, state


@pytest.mark.parametrize(("name", "args", "kwargs", "fragment"), CASES, ids=lambda v: repr(v)[:40])
def test_a_bad_tool_argument_gets_one_clear_error_and_changes_nothing(
    team: tuple[SharedCompute, Member],
    name: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fragment: str,
) -> None:
    shared, member = team
    before = snapshot(shared, member)
    answer = tool(member, name)(*args, **kwargs)
    assert isinstance(answer, str) and answer.startswith("Error: ") and fragment in answer, answer
    assert "\n" not in answer and "Traceback" not in answer, answer
    assert snapshot(shared, member) == before
    assert before[2].endswith("/sub\nkept")

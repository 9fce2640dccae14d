"""One tool set everywhere (issue 30, item 2), on real instances: SharedCompute's agents get the
managed loop's edit_file, grep and glob; every tool result is capped for the model with its head,
tail and a note; a binary file read says so; every instance's env has PYTHONDONTWRITEBYTECODE=1."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from kit import Member

from praisonai import Sandbox, _limits
from praisonai._errors import ConfigError
from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.providers.local import LocalCompute
from praisonai.managed import SharedCompute
from praisonai.managed.instance._tools import InstanceTools
from praisonai.sandbox import AsyncSandbox

TWO_MIB = "python3 -c \"import sys; sys.stdout.write('H' + 'x' * (2 * 1024 * 1024) + 'T')\""


def _tool(agent: Member, name: str) -> Callable[..., str]:
    return next(t for t in agent.tools if t.__name__ == name)


@pytest.fixture
def team() -> Iterator[Member]:
    member = Member("coder")
    with SharedCompute(LocalCompute(), environment=False) as shared:
        shared.attach([member], loop_tools=True)
        yield member


def test_a_shared_agent_edits_greps_and_globs_as_the_managed_loop_does(team: Member) -> None:
    write, edit = _tool(team, "write_file"), _tool(team, "edit_file")
    write("src/app.py", "def main():\n    return 1\n\ndef other():\n    return 1\n")
    assert "occurs 2 times" in edit("src/app.py", "return 1", "return 2")
    assert edit("src/app.py", "def main():\n    return 1", "def main():\n    return 42") == (
        "Replaced 1 occurrence in src/app.py"
    )
    assert (
        edit("src/app.py", "return 1", "return 3", replace_all=True) == "Replaced 1 occurrence in src/app.py"
    )
    assert (
        _tool(team, "read_file")("src/app.py") == "def main():\n    return 42\n\ndef other():\n    return 3\n"
    )
    assert (
        _tool(team, "grep")("return [0-9]+", "src") == "src/app.py:2:    return 42\nsrc/app.py:5:    return 3"
    )
    assert _tool(team, "glob")("**/*.py") == "src/app.py"
    assert _tool(team, "edit_file")("src/app.py", "absent", "x").startswith("Error: old_string was not found")
    assert _tool(team, "grep")(pattern=3).startswith("Error: ")  # a bad argument is an answer, not a raise
    assert "Args:" in (_tool(team, "edit_file").__doc__ or ""), "the managed loop's description, whole"


def test_a_two_mib_result_reaches_the_model_as_head_tail_and_a_note(team: Member) -> None:
    answer = _tool(team, "execute_command")(TWO_MIB)
    limit = _limits.TOOL_RESULT_MAX_CHARS
    assert answer.startswith("Hxxx") and answer.endswith("xxxT")
    assert "characters cut from the middle of this result" in answer
    assert limit < len(answer) < limit + 400, len(answer)


def test_the_managed_loop_caps_the_same_way_and_the_limit_is_configurable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PRAISONAI_TOOL_RESULT_CHARS", "5000")

    async def run() -> str:
        async with await AsyncSandbox.create(LocalCompute(), environment=False) as sb:
            outcome = await InstanceTools(sb, sb.info.metadata.get("working_dir", "/workspace")).call(
                "execute_command", {"command": TWO_MIB}
            )
            return outcome.content

    from praisonai import _portal

    answer = _portal.call(run)
    assert answer.startswith("Hxxx") and answer.endswith("xxxT") and 5000 < len(answer) < 5400
    monkeypatch.setenv("PRAISONAI_TOOL_RESULT_CHARS", "lots")
    with pytest.raises(ConfigError, match="PRAISONAI_TOOL_RESULT_CHARS='lots' is not a whole number"):
        SharedCompute(LocalCompute(), environment=False).build_tools()


def test_reading_a_binary_file_says_so(team: Member) -> None:
    _tool(team, "execute_command")("printf '\\177ELF\\002\\001\\000\\377\\376' > prog.bin")
    answer = _tool(team, "read_file")("prog.bin")
    assert answer.startswith("prog.bin is a binary file (9 bytes), not text") and "execute_command" in answer
    _tool(team, "write_file")("nul.txt", "text\0with a NUL")
    assert _tool(team, "read_file")("nul.txt") == "text\0with a NUL", "UTF-8 with a NUL is still text"


@pytest.mark.parametrize("make", [LocalCompute, DockerCompute], ids=["local", "docker"])
def test_every_instance_skips_bytecode_unless_its_env_says_otherwise(
    make: Callable[[], object], request: pytest.FixtureRequest
) -> None:
    if make is DockerCompute:
        request.getfixturevalue("docker_ok")
    with Sandbox.create(make(), environment=False) as sb:
        assert sb.exec("echo $PYTHONDONTWRITEBYTECODE").stdout == "1\n"
    with Sandbox.create(make(), environment=False, env={"PYTHONDONTWRITEBYTECODE": ""}) as sb:
        assert sb.exec('echo "[$PYTHONDONTWRITEBYTECODE]"').stdout == "[]\n"

"""The managed loop's instance tools on a real local and docker instance: each tool's answers and
errors, byte-exact files, edits that refuse ambiguity, glob/grep that run none of the model's
text, and a cancelled command whose whole process tree is gone from the instance."""

from __future__ import annotations

import random
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anyio
import pytest

from praisonai import AsyncSandbox, ConfigError, Sandbox
from praisonai.managed.instance._search import GLOB_LIMIT, GREP_LIMIT, MAX_LINE_CHARS, glob_regex
from praisonai.managed.instance._tools import INSTANCE_TOOL_NAMES, InstanceTools, ToolOutcome

T = TypeVar("T")
Body = Callable[[InstanceTools, AsyncSandbox], Awaitable[T]]


@pytest.fixture(scope="module", params=["local", "docker"])
def sb(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    """One instance per provider for the module (removed afterwards); each test works in a
    directory of its own under /workspace."""
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
    with Sandbox.create(request.param, environment=False) as sandbox:
        yield sandbox


def drive(sb: Sandbox, body: Body[T]) -> T:
    """Run ``body`` on this test's event loop with tools whose working dir is a new directory."""

    async def main() -> T:
        # The module's instance through a provider of this event loop's own (channels are per loop).
        asb = await AsyncSandbox.connect(sb.id, type(sb.provider).from_options(sb.provider.options))
        try:
            name = f"t-{uuid.uuid4().hex[:8]}"
            await asb.exec(["mkdir", name], check=True)  # relative: in the instance's workspace
            return await body(InstanceTools(asb, f"/workspace/{name}"), asb)
        finally:
            await asb.close()  # borrowed: lets go only

    return anyio.run(main)


async def ok(tools: InstanceTools, name: str, **arguments: Any) -> str:
    outcome = await tools.call(name, arguments)
    assert not outcome.is_error, outcome
    assert outcome.content
    return outcome.content


async def fails(tools: InstanceTools, name: str, arguments: Any) -> str:
    outcome = await tools.call(name, arguments)
    assert outcome.is_error, outcome
    assert outcome.content.startswith("Error")
    return outcome.content


async def exists(asb: AsyncSandbox, path: str) -> bool:
    return (await asb.exec(["test", "-e", path])).exit_code == 0


def test_specs_describe_the_tools_asked_for(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        specs = tools.specs(["grep", "read_file", "grep"])
        assert [s.name for s in specs] == ["grep", "read_file"]
        grep, read = specs
        assert grep.parameters["required"] == ["pattern"]
        assert set(grep.parameters["properties"]) == {"pattern", "path", "glob", "ignore_case"}
        assert grep.parameters["properties"]["ignore_case"]["type"] == "boolean"
        assert tools.working_dir in read.description and "{working_dir}" not in read.description
        assert "offset and limit" in read.description  # beyond the first paragraph
        assert [s.name for s in tools.specs(INSTANCE_TOOL_NAMES)] == list(INSTANCE_TOOL_NAMES)
        with pytest.raises(ConfigError, match="no instance tool named 'bash'"):
            tools.specs(["bash"])

    drive(sb, body)


def test_execute_command(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        await ok(tools, "write_file", path="here.txt", content="in the working dir\n")
        outcome = await tools.call("execute_command", {"command": "cat here.txt; echo warn >&2"})
        assert outcome == ToolOutcome("in the working dir\nwarn", False, 0)
        assert await ok(tools, "execute_command", command="true") == "(no output)"
        failed = await tools.call("execute_command", {"command": "echo partial; exit 3"})
        assert failed == ToolOutcome("Error (exit 3): partial", True, 3)
        slow = await tools.call("execute_command", {"command": "echo begun; sleep 30", "timeout": 1})
        assert slow == ToolOutcome("Error (timed out after 1s): begun", True, 124)

    drive(sb, body)


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("execute_command", {"command": "touch ran", "timeout": "soon"}, "timeout must be a number"),
        ("execute_command", {"command": "touch ran", "timeout": -1}, "positive"),
        ("execute_command", {"command": ["touch", "ran"]}, "command must be a string"),
        ("execute_command", {"command": "   "}, "command must not be empty"),
        ("execute_command", {"command": "touch ran", "shell": "bash"}, "unexpected keyword argument 'shell'"),
        ("write_file", {"path": "", "content": "x"}, "path must be a non-empty"),
        ("write_file", {"path": "ran\0x", "content": "x"}, "without NUL"),
        ("write_file", {"path": "ran", "content": 5}, "content must be a string"),
        ("write_file", {"path": "ran", "content": "\ud800"}, "content is not valid text"),
        ("write_file", {"path": "ran"}, "missing a required argument: 'content'"),
        ("read_file", {"path": 3}, "path must be a string"),
        ("read_file", {"path": "ran", "offset": True}, "offset must be a whole number"),
        ("read_file", {"path": "ran", "limit": 0}, "limit must be a whole number from 1"),
        (
            "edit_file",
            {"path": "ran", "old_string": "a", "new_string": "b", "replace_all": "yes"},
            "replace_all",
        ),
        ("edit_file", {"path": "ran", "old_string": "", "new_string": "b"}, "use write_file"),
        ("edit_file", {"path": "ran", "old_string": "a", "new_string": "a"}, "nothing to change"),
        ("list_files", {"path": None}, "path must be a string"),
        ("glob", {"pattern": ""}, "pattern must be a non-empty"),
        ("glob", {"pattern": "*.{py"}, "without its closing }"),
        ("grep", {"pattern": "x", "ignore_case": 1}, "ignore_case must be true or false"),
        ("grep", {"pattern": "x", "glob": ""}, "glob must be a non-empty"),
        ("grep", {"pattern": "a\0b"}, "without NUL"),
        ("bash", {"command": "touch ran"}, "the tools are execute_command, read_file, write_file, edit_file"),
        ("execute_command", ["touch ran"], "must be a JSON object"),
    ],
)
def test_bad_arguments_are_one_sentence_and_run_nothing(
    sb: Sandbox, name: str, arguments: Any, says: str
) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        assert says in await fails(tools, name, arguments)
        assert not await exists(asb, f"{tools.working_dir}/ran")

    drive(sb, body)


#: Text a command line would mangle or run: NUL, CR, CRLF, tabs, quotes, $(), backticks, emoji,
#: trailing spaces and no final newline.
TRICKY = "a\0b\r\nc\rd\te 'q' \"dq\" $(touch x) `id` \\n ü € 😀 \n\n  trailing  "


def test_write_and_read_are_byte_exact(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        answer = await ok(tools, "write_file", path="deep/er/file.txt", content=TRICKY)
        assert answer == f"Wrote {len(TRICKY.encode())} bytes to deep/er/file.txt"
        assert await asb.read_file(f"{tools.working_dir}/deep/er/file.txt") == TRICKY.encode()
        assert await ok(tools, "read_file", path=f"{tools.working_dir}/deep/er/file.txt") == TRICKY
        assert not await exists(asb, f"{tools.working_dir}/x")

    drive(sb, body)


def test_read_file_windows_and_errors(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        await ok(tools, "write_file", path="hello.txt", content="hello world")
        assert await ok(tools, "read_file", path="hello.txt", offset=6) == "world"
        head = await ok(tools, "read_file", path="hello.txt", limit=5)
        assert head == "hello\n[6 more bytes of 11: read_file('hello.txt', offset=5)]"
        assert "at or past the end" in await fails(tools, "read_file", {"path": "hello.txt", "offset": 11})
        await ok(tools, "write_file", path="empty", content="")
        assert await ok(tools, "read_file", path="empty") == "(empty file)"
        assert "no such file" in await fails(tools, "read_file", {"path": "absent.txt"})

    drive(sb, body)


def test_edit_file_replaces_exactly_one_occurrence_or_says_why_not(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        path = f"{tools.working_dir}/code.py"
        # Not UTF-8, CRLF line ends: an edit must leave every byte it does not replace alone.
        original = b"\xff\xfe\x00raw\r\nx = 1\r\ny = 1\r\nx = 1\r\nend"
        await asb.write_file(path, original)

        ambiguous = await fails(
            tools, "edit_file", {"path": "code.py", "old_string": "x = 1", "new_string": "x = 2"}
        )
        assert "occurs 2 times in code.py" in ambiguous and "replace_all" in ambiguous
        absent = await fails(
            tools, "edit_file", {"path": "code.py", "old_string": "z = 1", "new_string": "z = 2"}
        )
        assert "not found in code.py" in absent and "whitespace" in absent
        assert await asb.read_file(path) == original  # refused edits change nothing

        answer = await ok(tools, "edit_file", path="code.py", old_string="y = 1\r\n", new_string="y = 'ü'\n")
        assert answer == "Replaced 1 occurrence in code.py"
        assert await asb.read_file(path) == b"\xff\xfe\x00raw\r\nx = 1\r\ny = '\xc3\xbc'\nx = 1\r\nend"
        answer = await ok(tools, "edit_file", path=path, old_string="x = 1", new_string="", replace_all=True)
        assert answer == f"Replaced 2 occurrences in {path}"
        assert await asb.read_file(path) == b"\xff\xfe\x00raw\r\n\r\ny = '\xc3\xbc'\n\r\nend"
        assert "no such file" in await fails(
            tools, "edit_file", {"path": "nope.py", "old_string": "a", "new_string": "b"}
        )

    drive(sb, body)


def test_list_files(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        for name in ("b.txt", ".hidden", "sub/inner.txt", "-e"):
            await ok(tools, "write_file", path=name, content="x")
        await ok(tools, "execute_command", command="mkdir void")
        assert (await ok(tools, "list_files")).splitlines() == sorted(
            ["-e", ".hidden", "b.txt", "sub/", "void/"]
        )
        assert await ok(tools, "list_files", path=f"{tools.working_dir}/sub") == "inner.txt"
        assert await ok(tools, "list_files", path="void") == "(empty directory)"
        assert "Error (exit 2)" in await fails(tools, "list_files", {"path": "nowhere"})

    drive(sb, body)


def test_glob_matches_paths_below_the_search_root(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        files = [
            "a.py",
            "b.js",
            "src/c.py",
            "src/deep/d.py",
            "src/deep/e.ts",
            "src/f.tsx",
            ".git/g.py",
            "q'uo\"te $x.py",
        ]
        for name in files:
            await ok(tools, "write_file", path=name, content="x")
        await ok(tools, "execute_command", command="mkdir dir.py")
        assert (await ok(tools, "glob", pattern="*.py")).splitlines() == ["a.py", "q'uo\"te $x.py"]
        everywhere = ["a.py", "q'uo\"te $x.py", "src/c.py", "src/deep/d.py"]
        assert (await ok(tools, "glob", pattern="**/*.py")).splitlines() == everywhere
        assert (await ok(tools, "glob", pattern="src/**")).splitlines() == [
            "src/c.py", "src/deep/d.py", "src/deep/e.ts", "src/f.tsx"
        ]  # fmt: skip
        assert (await ok(tools, "glob", pattern="**/*.{ts,tsx}", path="src")).splitlines() == [
            "src/deep/e.ts", "src/f.tsx"
        ]  # fmt: skip
        assert (
            await ok(tools, "glob", pattern="?.py", path=f"{tools.working_dir}/src")
            == f"{tools.working_dir}/src/c.py"
        )
        assert (
            await ok(tools, "glob", pattern=f"{tools.working_dir}/src/*/[!e]*")
            == f"{tools.working_dir}/src/deep/d.py"
        )
        assert await ok(tools, "glob", pattern="q'uo\"te $x.py") == "q'uo\"te $x.py"
        assert await ok(tools, "glob", pattern="*.rs") == "No files match '*.rs' under ."
        assert "src/c.py is not a directory" in await fails(
            tools, "glob", {"pattern": "*", "path": "src/c.py"}
        )

    drive(sb, body)


def test_glob_and_grep_cap_their_output_and_say_how_much_is_left_out(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        await ok(tools, "execute_command", command=f"for i in $(seq {GLOB_LIMIT + 5}); do : > f$i.txt; done")
        paths = (await ok(tools, "glob", pattern="*.txt")).splitlines()
        assert len(paths) == GLOB_LIMIT + 1 and paths[:3] == ["f1.txt", "f10.txt", "f100.txt"]  # sorted
        assert paths[-1] == "[5 more paths not shown; narrow the pattern or the path]"

        await ok(
            tools, "write_file", path="many.log", content="hit\n" * (GREP_LIMIT + 7) + "hit" + "x" * 10_000
        )
        lines = (await ok(tools, "grep", pattern="^hit", path="many.log")).splitlines()
        assert len(lines) == GREP_LIMIT + 1 and lines[0] == "many.log:1:hit"
        assert lines[-1] == "[8 more matching lines not shown; narrow the pattern, path or glob]"
        long_line = await ok(tools, "grep", pattern="hitx")
        assert long_line.startswith("many.log:308:hitxxx") and long_line.endswith("xxx [...]")
        assert len(long_line) <= MAX_LINE_CHARS + len(" [...]")

    drive(sb, body)


def test_grep(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        await ok(
            tools, "write_file", path="src/app.py", content="import os\n# TODO: fix\ndef main():\n    pass\n"
        )
        await ok(tools, "write_file", path="src/notes.md", content="todo later\n-e is a flag\n")
        await ok(tools, "write_file", path=".git/HEAD", content="TODO in git\n")
        await asb.write_file(f"{tools.working_dir}/blob.bin", b"\x00\x01TODO\x00")
        assert await ok(tools, "grep", pattern="TODO") == "src/app.py:2:# TODO: fix"
        insensitive = await ok(tools, "grep", pattern="todo", ignore_case=True)
        assert sorted(insensitive.splitlines()) == ["src/app.py:2:# TODO: fix", "src/notes.md:1:todo later"]
        assert (
            await ok(tools, "grep", pattern="todo", ignore_case=True, glob="*.md")
            == "src/notes.md:1:todo later"
        )
        assert await ok(tools, "grep", pattern=r"def \w+\(", path=f"{tools.working_dir}/src") == (
            f"{tools.working_dir}/src/app.py:3:def main():"
        )
        assert await ok(tools, "grep", pattern="-e", path="src/notes.md") == "src/notes.md:2:-e is a flag"
        assert await ok(tools, "grep", pattern="absent") == "No matches for 'absent' in ."
        assert "No such file" in await fails(tools, "grep", {"pattern": "x", "path": "nowhere"})
        assert "grep failed" in await fails(tools, "grep", {"pattern": "(unclosed"})

    drive(sb, body)


def hostile(marker: str) -> list[str]:
    """Text that would run ``touch marker`` (or change grep's options) if it reached a shell."""
    return [
        f"$(touch {marker})",
        f"`touch {marker}`",
        f'"; touch {marker}; echo "',
        f"'; touch {marker}; echo '",
        f"x\ntouch {marker}\n",
        f"x' -o -exec touch {marker} ';' -o -name 'x",
        "-e",
        "--include=*",
        f"-exec touch {marker} ;",
    ]


def test_hostile_patterns_and_paths_run_nothing(sb: Sandbox) -> None:
    async def body(tools: InstanceTools, asb: AsyncSandbox) -> None:
        marker = f"/tmp/pwned-{uuid.uuid4().hex[:8]}"
        await ok(tools, "write_file", path="dollar.txt", content=f"a $(touch {marker}) b\n")
        try:
            for text in hostile(marker):
                for name, arguments in [
                    ("glob", {"pattern": text}),
                    ("glob", {"pattern": "*", "path": text}),
                    ("grep", {"pattern": text}),
                    ("grep", {"pattern": "x", "path": text}),
                    ("grep", {"pattern": "x", "glob": text}),
                    ("list_files", {"path": text}),
                ]:
                    assert (await tools.call(name, arguments)).content, (name, arguments)
            assert not await exists(asb, marker)
        finally:  # a local instance's /tmp is the host's: never leave a marker there
            await asb.exec(["rm", "-f", marker])
        # The pattern reached grep verbatim: as a regex it matches the line with that text.
        found = await ok(tools, "grep", pattern=r"\$\(touch /tmp/pwned-[0-9a-f]+\)")
        assert found == f"dollar.txt:1:a $(touch {marker}) b"

    drive(sb, body)


def test_cancelling_a_command_kills_its_process_tree(sb: Sandbox) -> None:
    seconds = f"300.{random.randrange(10**8):08d}"  # unique: local instances share the host's ps

    async def sleeping(asb: AsyncSandbox) -> int:
        ps = await asb.exec("ps -eo args", check=True)
        return sum(1 for line in ps.stdout.splitlines() if line.strip() == f"sleep {seconds}")

    async def body(tools: InstanceTools, asb: AsyncSandbox) -> tuple[bool, int, str]:
        outcome: ToolOutcome | None = None
        with anyio.fail_after(120):  # a hang fails the test instead of stalling the suite
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:

                    async def cancel_once_running() -> None:
                        while await sleeping(asb) < 2:
                            await anyio.sleep(0.05)
                        scope.cancel()

                    group.start_soon(cancel_once_running)
                    command = f"sh -c 'sleep {seconds} & sleep {seconds}'"
                    outcome = await tools.call("execute_command", {"command": command})
            assert outcome is None  # the call never returned: it was cancelled
            left = await sleeping(asb)
            after = await ok(tools, "execute_command", command="echo still usable")
        return scope.cancelled_caught, left, after

    cancelled, left, after = drive(sb, body)
    assert cancelled
    assert left == 0
    assert after == "still usable"


@pytest.mark.parametrize(
    ("pattern", "regex"),
    [
        ("*.py", r"^[^/]*\.py$"),
        ("**/*.py", r"^([^/]*/)*[^/]*\.py$"),
        ("src/**", r"^src/.*$"),
        ("*.{ts,tsx}", r"^[^/]*\.(ts|tsx)$"),
        ("[!a]?", r"^[^a/][^/]$"),
        ("a[", r"^a\[$"),
        (r"a\*b", r"^a\*b$"),
        ("a+b(c)|$", r"^a\+b\(c\)\|\$$"),
    ],
)
def test_glob_patterns_become_anchored_regexes(pattern: str, regex: str) -> None:
    assert glob_regex(pattern) == regex

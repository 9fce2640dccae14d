"""The real ``praisonai`` command in a child process: exit codes, streaming, clean errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kit import ECHO_LINES, answers_while_open, stops_reading_when_done

from praisonai.compute.registry import available_providers


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_version() -> None:
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("praisonai ")


def test_providers_table() -> None:
    r = cli("compute", "providers")
    assert r.returncode == 0 and "local" in r.stdout and "docker" in r.stdout


def test_run_exits_with_the_command_code_and_streams_both_streams() -> None:
    r = cli("sandbox", "run", "--compute", "local", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
    assert (r.returncode, r.stdout, r.stderr.strip().splitlines()[-1]) == (3, "out\n", "err")


def test_env_option() -> None:
    r = cli("sandbox", "run", "-c", "local", "-e", "A=1 2", "--", "sh", "-c", 'echo "$A"')
    assert r.stdout == "1 2\n"


def test_timeout_is_reported() -> None:
    r = cli("sandbox", "run", "-c", "local", "--timeout", "0.5", "--", "sleep", "10")
    assert r.returncode == 124 and "timed out" in r.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("sandbox", "run", "-c", "nope", "--", "true"), "unknown compute provider 'nope'"),
        (("sandbox", "run", "-c", "local", "-e", "BAD", "--", "true"), "--env takes KEY=VALUE"),
        (("sandbox", "run", "-c", "local", "--image", "x", "--", "true"), "cannot honour image"),
    ],
)
def test_user_mistakes_are_one_line_without_traceback(args: tuple[str, ...], needle: str) -> None:
    r = cli(*args)
    assert r.returncode != 0 and needle in r.stderr and "Traceback" not in r.stderr


@pytest.mark.usefixtures("docker_ok")
def test_default_compute_runs_the_main_job_in_docker() -> None:
    r = cli("sandbox", "run", "--", "python3", "-c", "print(2+2)")
    assert (r.returncode, r.stdout) == (0, "4\n") and "compute: docker" in r.stderr


# ---- the newcomer's path: help, JSON, stdin, setup timeout, start-up -------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        (),
        ("sandbox", "run", "--help"),
        ("compute", "stop", "--help"),
        ("env", "validate", "--help"),
        ("env", "captures", "--help"),
        ("compute", "--help"),
    ],
)
def test_help_has_no_type_labels_and_names_the_program(args: tuple[str, ...]) -> None:
    r = cli(*args)
    assert r.returncode == 0 and r.stdout.startswith("Usage: praisonai"), r.stderr
    assert not re.search(r"<(bool|str|int|float|path|list\[str\])>", r.stdout), r.stdout
    assert "{" not in r.stdout.splitlines()[0]  # readable usage: no "{command}..."


def test_help_lists_the_registered_providers() -> None:
    """The providers the help names are the registry's, never a list written by hand: sandbox
    run's --compute names each, and the top-level help sends to `compute providers`, which lists
    each."""
    registered = available_providers()
    run_help = " ".join(cli("sandbox", "run", "--help").stdout.split())
    named = re.search(r"--compute NAME Provider: ([a-z0-9_, -]+) \(", run_help)
    assert named and named[1].split(", ") == registered, run_help
    assert "'praisonai compute providers' lists where" in " ".join(cli("--help").stdout.split())
    listed = json.loads(cli("compute", "providers", "--json").stdout)
    assert set(registered) <= {row["name"] for row in listed}  # and flavours: local (bubblewrap)


def test_run_help_says_a_shell_line_needs_sh_c_and_stdin_is_forwarded() -> None:
    text = " ".join(cli("sandbox", "run", "--help").stdout.split())
    assert "sandbox run -- sh -c 'a | b'" in text and "unless -i is given" in text


def test_a_shell_line_given_as_one_word_gets_a_hint() -> None:
    r = cli("sandbox", "run", "-c", "local", "--", "echo a | wc -c")
    assert r.returncode == 127 and "-- sh -c 'echo a | wc -c'" in r.stderr


_RUN_LOCAL = [sys.executable, "-c", "from praisonai.cli import main; main()", "sandbox", "run", "-c", "local"]


def test_piped_stdin_reaches_the_command_with_i() -> None:
    r = subprocess.run(
        [*_RUN_LOCAL, "-i", "--", "wc", "-c"], input="four", capture_output=True, text=True, timeout=120
    )
    assert (r.returncode, r.stdout.strip()) == (0, "4"), r.stderr


def test_piped_stdin_streams_and_a_command_that_ends_stops_the_reading() -> None:
    answers_while_open([*_RUN_LOCAL, "-i", "--", "sh", "-c", ECHO_LINES])
    stops_reading_when_done([*_RUN_LOCAL, "-i", "--", "head", "-c", "4"])


def test_an_open_pipe_on_stdin_is_not_read_without_i() -> None:
    """As docker run without -i: a pipe nobody closes (a CI runner's stdin) does not hang the run."""
    with subprocess.Popen(["sleep", "600"], stdout=subprocess.PIPE) as writer:
        try:
            r = subprocess.run(
                [*_RUN_LOCAL, "--", "wc", "-c"],
                stdin=writer.stdout,
                capture_output=True,
                text=True,
                timeout=60,
            )
        finally:
            writer.kill()
    assert (r.returncode, r.stdout.strip()) == (0, "0"), r.stderr


def test_json_outputs_use_json_types() -> None:
    r = cli("compute", "providers", "--json")
    rows = json.loads(r.stdout)
    assert all(isinstance(row["installed"], bool) and isinstance(row["available"], bool) for row in rows)
    assert all(" " not in key for row in rows for key in row)
    local = next(row for row in rows if row["name"] == "local")
    assert (local["installed"], local["available"], local["why_not"]) == (True, True, "")


def test_a_table_not_on_a_terminal_keeps_each_row_on_one_whole_line() -> None:
    """Piped (a script, a log), no reason is wrapped or cut: one line per row, nothing trailing."""
    rows = json.loads(cli("compute", "providers", "--json").stdout)
    lines = cli("compute", "providers").stdout.splitlines()
    assert len(lines) == 1 + len(rows) and not any(line.endswith(" ") for line in lines), lines
    for row, line in zip(rows, lines[1:], strict=True):
        assert line.startswith(row["name"]) and row["why_not"] in line, line


def test_help_is_h_too_on_every_command() -> None:
    assert cli("compute", "ps", "-h").stdout == cli("compute", "ps", "--help").stdout != ""


def test_output_cut_off_by_its_reader_ends_quietly() -> None:
    """`| head`: no traceback; 0 for a listing, 141 (128 + SIGPIPE, as a shell says) for a run
    whose command was stopped before its end."""
    code = "from praisonai.cli import main; main()"
    for args, status in ((["compute", "providers"], 0), ([*_RUN_LOCAL[3:], "--", "seq", "1", "999999"], 141)):
        with subprocess.Popen(
            [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as p:
            assert p.stdout is not None and p.stderr is not None
            p.stdout.readline()
            p.stdout.close()
            assert (p.wait(timeout=60), p.stderr.read()) == (status, b""), args


def test_our_failures_in_a_run_are_125_and_the_commands_own_codes_pass_through() -> None:
    """As docker run: 125 is ours, 126 cannot run, 127 not found, anything else the command's."""
    assert cli("sandbox", "run", "-c", "nope", "--", "true").returncode == 125
    assert cli("sandbox", "run", "-c", "local", "--bogus", "--", "true").returncode == 125
    assert cli("sandbox", "run", "-c", "local", "--", "/etc/passwd").returncode == 126
    assert cli("sandbox", "run", "-c", "local", "--", "no-such-program").returncode == 127
    assert cli("sandbox", "run", "-c", "local", "--", "sh", "-c", "exit 2").returncode == 2
    assert cli("compute", "ps", "--bogus").returncode == 2  # not a run: click's usage status


def test_setup_has_a_configurable_timeout(tmp_path: Path, home: Path) -> None:
    env_file = tmp_path / "environment.yaml"
    env_file.write_text("setup: sleep 30\nsetup_timeout: 0.5\ncapture: false\n")
    r = cli("sandbox", "run", "-c", "local", "--environment", str(env_file), "--", "true")
    assert r.returncode == 125 and "timed out after its setup_timeout of 0.5s" in r.stderr, r.stderr
    assert not list((home / "local").glob("*")) and "Traceback" not in r.stderr


@pytest.mark.parametrize("args", [("--version",), ("--help",), ()])
def test_version_and_help_import_no_framework(args: tuple[str, ...]) -> None:
    """Start-up: these answer before typer, rich, pydantic, anyio or docker-py is imported."""
    code = (
        "import sys; sys.argv = ['praisonai', *sys.argv[1:]]; from praisonai.cli import main; main(); "
        "heavy = {'typer', 'rich', 'pydantic', 'anyio', 'docker', 'click'}; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & heavy), file=sys.stderr)"
    )
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr.strip()) == (0, "[]")


def test_json_has_one_shape_times_as_iso_8601(capsys: pytest.CaptureFixture[str]) -> None:
    """Every --json: booleans and numbers keep their types; a time (key ``*_at``) is ISO 8601 UTC."""
    from praisonai.cli import _output

    _output.print_json([{"created_at": 1.5, "ok": True, "age_s": 2.0, "size_bytes": 3, "ended_at": None}])
    shown = json.loads(capsys.readouterr().out)
    assert shown == [
        {
            "created_at": "1970-01-01T00:00:01.500Z",
            "ok": True,
            "age_s": 2.0,
            "size_bytes": 3,
            "ended_at": None,
        }
    ]


def test_a_progress_line_shows_a_setup_step_whole() -> None:
    """A long setup command is shown with all of its arguments, never cut before them."""
    import io
    import logging

    from rich.console import Console

    from praisonai.cli._output import _StatusHandler

    console = Console(file=io.StringIO(), width=60, record=True)
    status = console.status("starting")
    step = "setup 1/1: pip install --no-cache-dir -r requirements.txt --index-url https://example.test/simple"
    _StatusHandler(status).emit(logging.makeLogRecord({"msg": step}))
    assert step in " ".join(console.export_text().split())

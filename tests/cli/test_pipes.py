"""``praisonai sandbox run`` and ``sandbox exec`` between pipes, as ``docker run`` and ``docker exec``
are used: their reader closing ends them at once (``| head``), and ``-i`` streams whatever stdin
is — a pipe, a file or a device.

The real command in a child process, against each provider that runs here; both of its output
streams are pipes, as under a parent process that captures stderr.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from praisonai._ledger import Ledger

CLI = [sys.executable, "-c", "from praisonai.cli import main; main()"]
RUN = [*CLI, "sandbox", "run", "--no-environment"]
#: How many seq processes of a run's own (its ``seq 1 N``) run in the instance, from /proc: a
#: local or ssh instance sees the host's, another test's among them.
RUNNING_SEQ = (
    "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' <$f; echo; done 2>/dev/null | grep -c '^seq 1 {}'"
)


def endless() -> list[str]:
    """A command that writes far more than its reader takes, of a length of its own."""
    return ["--", "seq", "1", str(2_000_000 + secrets.randbelow(10**6))]


#: How long a run may take to end once its reader is gone: it ends at once; only a hang is slower.
ENDS_WITHIN_S = 15
#: docker's one-shot path hung in about half of these runs; local's never did, so fewer there.
TRIES = {"docker": 20, "local": 5, "ssh": 5}
#: Runs made at once: the hang is each run's own, so runs side by side find it as surely.
AT_ONCE = 5


@pytest.fixture(params=sorted(TRIES))
def provider(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The provider's name, usable by the CLI children (ssh: the test sshd, by its variables)."""
    if request.param == "docker":
        request.getfixturevalue("docker_ok")
    if request.param == "ssh":
        server = request.getfixturevalue("sshd")
        monkeypatch.setenv("PRAISONAI_SSH_HOSTS", f"{server.user}@{server.host}:{server.port}")
        monkeypatch.setenv("PRAISONAI_SSH_KEY", str(server.key_file))
        monkeypatch.setenv("PRAISONAI_SSH_KNOWN_HOSTS", str(server.known_hosts))
    return str(request.param)


def cut_off(argv: list[str], count: int) -> list[tuple[int, bytes]]:
    """Run ``count`` writers (``argv`` ends with one) side by side, read two lines of each one's
    output and close its pipe: each one's exit status (each must end) and what it said on stderr."""
    runs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(count)]
    try:
        for run in runs:
            assert run.stdout is not None
            assert run.stdout.readline() == b"1\n" and run.stdout.readline() == b"2\n"
            run.stdout.close()  # as `head -n 2` does once it has its lines
        return [(run.wait(ENDS_WITHIN_S), run.communicate()[1]) for run in runs]
    finally:
        for run in runs:
            run.kill()
            run.wait()


def test_its_reader_closing_ends_it_every_time_and_leaves_nothing(home: Path, provider: str) -> None:
    for _ in range(TRIES[provider] // AT_ONCE):
        for code, said in cut_off([*RUN, "-c", provider, *endless()], AT_ONCE):
            assert code == 141, said  # as a shell reports a writer ended by its closed pipe
            assert b"Traceback" not in said and b"Exception ignored" not in said, said
    assert Ledger.default().entries() == []  # each instance was removed


def test_exec_ends_when_its_reader_closes_and_the_command_is_killed(home: Path, provider: str) -> None:
    made = subprocess.run([*CLI, "sandbox", "create", "-c", provider], capture_output=True, check=True)
    instance = made.stdout.decode().split()[-1]
    try:
        command = endless()
        for code, said in cut_off([*CLI, "sandbox", "exec", instance, *command], AT_ONCE):
            assert code == 141, said
            assert b"Traceback" not in said and b"Exception ignored" not in said, said
        left = subprocess.run(
            [*CLI, "sandbox", "exec", instance, "--", "sh", "-c", RUNNING_SEQ.format(command[-1])],
            capture_output=True,
            check=False,
        )
        assert left.stdout == b"0\n", left  # each cut-off command was killed
    finally:
        subprocess.run([*CLI, "sandbox", "rm", instance], capture_output=True, check=False)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_i_streams_a_device_as_docker_run_i_does(home: Path, provider: str, device: str) -> None:
    """``-i -- head -c 10 < /dev/zero``: ten bytes, not an empty stdin nor a read without end."""
    with open(device, "rb") as stdin:
        r = subprocess.run(
            [*RUN, "-c", provider, "-i", "--", "head", "-c", "10"],
            stdin=stdin, capture_output=True, timeout=120, check=False,
        )  # fmt: skip
    assert (r.returncode, r.stdout) == (0, b"\0" * 10 if device == "/dev/zero" else b""), r.stderr
    assert Ledger.default().entries() == []

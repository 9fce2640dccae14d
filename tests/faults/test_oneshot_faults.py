"""The one-shot docker run whose client is SIGKILLed: nothing is left to remove the container, so
the engine must (``auto_remove``) once the command ends, by itself or at its deadline.

The real ``praisonai sandbox run`` in a child process, the real engine; the ledger row of the
dead client stays for ``gc`` (it lives in the test's own home).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai._ledger import Ledger
from praisonai.compute.providers.docker import container_name

pytestmark = pytest.mark.usefixtures("docker_ok")


@pytest.fixture
def client(home: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Starts ``praisonai sandbox run`` children; at the end kills any left and removes their
    containers (only when the test failed are any still there)."""
    children: list[subprocess.Popen[bytes]] = []
    yield children
    for child in children:
        if child.poll() is None:
            child.kill()
            child.wait()
    for entry in Ledger.default().entries():
        subprocess.run(
            ["docker", "rm", "-f", container_name(entry.instance_id)], capture_output=True, check=False
        )


def start(children: list[subprocess.Popen[bytes]], *args: str) -> tuple[subprocess.Popen[bytes], str]:
    """The run, once its command has printed ``up``; and its instance id."""
    child = subprocess.Popen(
        [sys.executable, "-c", "from praisonai.cli import main; main()", "sandbox", "run", "-c", "docker",
         "--no-environment", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    children.append(child)
    assert child.stdout is not None
    assert child.stdout.readline() == b"up\n"
    [entry] = Ledger.default().entries()
    return child, entry.instance_id


def exists(instance_id: str) -> bool:
    found = subprocess.run(
        ["docker", "inspect", container_name(instance_id)], capture_output=True, check=False
    )
    return found.returncode == 0


def gone_within(instance_id: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while exists(instance_id):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_the_container_goes_when_the_command_ends_after_its_client_died(
    client: list[subprocess.Popen[bytes]],
) -> None:
    child, instance_id = start(client, "--", "sh", "-c", "echo up; sleep 3")
    child.kill()
    child.wait()
    assert exists(instance_id)  # the command still runs: killing the client does not end it
    assert gone_within(instance_id, 60)


def test_a_command_whose_client_died_is_killed_at_its_deadline(client: list[subprocess.Popen[bytes]]) -> None:
    """No client is left to enforce --timeout: the container's own backstop ends the command
    (a little after the timeout), and the engine removes the container."""
    child, instance_id = start(client, "--timeout", "1", "--", "sh", "-c", "echo up; exec sleep 600")
    child.kill()
    child.wait()
    assert gone_within(instance_id, 60)

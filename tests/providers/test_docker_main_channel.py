"""A docker instance's main channel: the helper on its container's main stdin, attached by the
process that owns the instance (its creator, or the process that claimed it from a warm pool and
adopted it with the handed-off key, once), with real processes and a real engine. Every test
removes what it made."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kit import wait_for_refills
from leftovers import child_env, remove_leftovers

from praisonai import _portal
from praisonai._errors import ChannelClosedError, ConfigError, InstanceNotFoundError
from praisonai._ledger import Ledger
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.providers.docker._attach import AttachTransport
from praisonai.compute.warm import fill

pytestmark = pytest.mark.usefixtures("docker_ok")
ROOT = Path(__file__).resolve().parents[2]

# Process B: adopts the instance with the key on its stdin and runs one command through the main
# channel; says which transport served it and whether docker-py was imported.
_ADOPT = textwrap.dedent(
    """
    import json, sys
    from praisonai import _portal
    from praisonai.compute.providers.docker import DockerCompute
    instance_id, key, command = sys.argv[1], sys.stdin.readline().strip(), sys.argv[2]
    provider = DockerCompute()
    provider.adopt(instance_id, key)
    result = _portal.call(provider.execute, instance_id, command)
    channel = provider._channels.peek(instance_id)
    transport, helper = type(channel.transport).__name__, channel.helper_pid
    answer = {"out": result.stdout, "transport": transport, "docker": "docker" in sys.modules}
    print(json.dumps({**answer, "helper": helper} if len(sys.argv) > 3 else answer), flush=True)
    if len(sys.argv) > 3:  # then run that command, holding the channel, until killed
        _portal.call(provider.execute, instance_id, sys.argv[3])
    """
)


# A process that claims the home's warm instance and runs one command through its main channel;
# says which transport served it, whether docker-py was imported and the helper's pid. With a
# second command, it then runs that one, holding the channel, until killed.
_CLAIM = textwrap.dedent(
    """
    import json, sys
    from praisonai import _portal
    from praisonai.compute.config import ComputeConfig
    from praisonai.compute.providers.docker import DockerCompute
    from praisonai.compute.warm import claim
    provider = DockerCompute()
    instance_id = _portal.call(claim, provider, ComputeConfig()).instance_id
    result = _portal.call(provider.execute, instance_id, sys.argv[1])
    channel = provider._channels.peek(instance_id)
    transport, helper = type(channel.transport).__name__, channel.helper_pid
    answer = {"id": instance_id, "out": result.stdout, "transport": transport}
    answer["docker"] = "docker" in sys.modules
    print(json.dumps({**answer, "helper": helper} if len(sys.argv) > 2 else answer), flush=True)
    if len(sys.argv) > 2:
        _portal.call(provider.execute, instance_id, sys.argv[2])
    """
)


@pytest.fixture
def pool_home(home: Path) -> Iterator[Path]:
    """This test's home; afterwards its refills are waited for and everything it made removed."""
    yield home
    wait_for_refills(home)
    remove_leftovers(home, set())


def _claim_in_child(command: str, *stay: str, wait: bool = True) -> Any:
    """The claiming process's answer; with ``wait=False``, the process itself (it stays)."""
    process = subprocess.Popen(
        [sys.executable, "-c", _CLAIM, command, *stay],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=child_env(Path(os.environ["PRAISONAI_HOME"])),
    )  # fmt: skip
    if not wait:
        return process
    out, err = process.communicate(timeout=60)
    assert out, err
    return json.loads(out)


@pytest.fixture
def provider() -> DockerCompute:
    return DockerCompute()


@pytest.fixture
def make(provider: DockerCompute) -> Iterator[Callable[[], str]]:
    made: list[str] = []

    def provision() -> str:
        made.append(_portal.call(provider.provision, {}).instance_id)
        return made[-1]

    yield provision
    for instance_id in made:
        _portal.call(provider.shutdown, instance_id)


def _adopt(instance_id: str, key: str, command: str, *stay: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", _ADOPT, instance_id, command, *stay],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _answer(process: subprocess.Popen[str], key: str) -> dict[str, object]:
    """Process B's answer; B is waited for unless it stays (then the caller kills it)."""
    assert process.stdin is not None and process.stdout is not None
    if len(process.args) < 6:  # type: ignore[arg-type]
        out, err = process.communicate(key + "\n", timeout=60)
        assert out, err
        return dict(json.loads(out))
    process.stdin.write(key + "\n")
    process.stdin.close()
    line = process.stdout.readline()
    assert line, "process B did not answer"
    return dict(json.loads(line))


def _running(instance_id: str) -> list[str]:
    """The pid and first 40 characters of each process of the instance, seen by a fresh
    ``docker exec`` (not through any helper)."""
    found = subprocess.run(
        ["docker", "exec", container_name(instance_id), "ps", "-eo", "pid,args"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [" ".join(line.split()[:2])[:40] for line in found.stdout.splitlines()[1:]]


def test_the_creators_first_command_goes_through_the_main_channel(make, provider: DockerCompute) -> None:
    instance_id = make()
    result = _portal.call(provider.execute, instance_id, "echo $((6 * 7))")
    assert result.stdout == "42\n"
    assert isinstance(provider._channels.peek(instance_id).transport, AttachTransport)
    assert provider.handoff_key(instance_id) is None  # open already: nothing to hand off


def test_helper_replies_stay_out_of_the_engine_log(make, provider: DockerCompute) -> None:
    instance_id = make()
    _portal.call(provider.write_file, instance_id, "/tmp/f", b"only-in-the-instance")
    assert _portal.call(provider.read_file, instance_id, "/tmp/f") == b"only-in-the-instance"
    inspected = provider.api.inspect_container(container_name(instance_id))
    assert inspected["HostConfig"]["LogConfig"]["Type"] == "none"
    assert inspected["Config"]["OpenStdin"] and inspected["Config"]["StdinOnce"]


def test_a_claimed_instance_runs_in_the_claiming_process_without_docker_py(pool_home: Path) -> None:
    """Handed off through a warm pool: the claiming process attaches to the main channel; the key
    is one use: read from the ledger before the claim, it is refused to a third process."""
    _portal.call(fill, DockerCompute(), ComputeConfig(), 1)
    ((instance_id, key),) = Ledger(pool_home / "ledger.sqlite3").execute(
        "SELECT instance_id, handoff FROM instances"
    )
    answer = _claim_in_child("echo adopted; pwd")
    assert answer == {
        "id": instance_id, "out": "adopted\n/workspace\n", "transport": "AttachTransport", "docker": False
    }  # fmt: skip
    third = _adopt(instance_id, key, "echo again")
    _, err = third.communicate(key + "\n", timeout=60)
    assert third.returncode != 0 and f"the handoff key of docker instance {instance_id} is used" in err


def test_a_wrong_key_is_refused_with_one_sentence(make, provider: DockerCompute) -> None:
    instance_id = make()
    with pytest.raises(ConfigError, match="not its main channel's") as caught:
        DockerCompute().adopt(instance_id, "@pz" + "0" * 32)
    assert provider.handoff_key(instance_id) not in str(caught.value)


def test_a_killed_owner_ends_the_helper_and_its_command(pool_home: Path) -> None:
    _portal.call(fill, DockerCompute(), ComputeConfig(), 1)
    owner = _claim_in_child("true", "sleep 4321", wait=False)
    try:
        assert owner.stdout is not None
        line = owner.stdout.readline()
        assert line, "the claiming process did not answer"
        answer = json.loads(line)
        instance_id = answer["id"]
        assert answer["transport"] == "AttachTransport"
        helper = f"{answer['helper']} /bin/sh"
        _wait_until(lambda: "sleep" in " ".join(_running(instance_id)))
        assert helper in _running(instance_id)
    finally:
        owner.send_signal(signal.SIGKILL)
        owner.wait()
        for stream in (owner.stdout, owner.stderr):
            if stream is not None:
                stream.close()
    _wait_until(lambda: not any(p == helper or p.endswith("sleep 4321") for p in _running(instance_id)))


def _wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, "not within 20 s"
        time.sleep(0.2)


def test_a_command_cannot_forge_a_reply_on_the_main_channel(make, provider: DockerCompute) -> None:
    instance_id = make()
    # the helper's stdout and stderr are the container's main ones, which PID 1 holds too
    job = "$(ls /tmp/.praisonai/x | head -n 1 | cut -d. -f1)"
    forged = f"echo \"D {job} 0 0 x\" >/proc/1/fd/2; echo '@pz0 0' >/proc/1/fd/1"
    result = _portal.call(provider.execute, instance_id, f"{forged}; sleep 0.2; echo real; exit 3")
    assert isinstance(provider._channels.peek(instance_id).transport, AttachTransport)
    assert (result.stdout, result.exit_code) == ("real\n", 3)
    assert _portal.call(provider.execute, instance_id, "echo next").stdout == "next\n"


def test_the_key_is_on_no_command_line(make, provider: DockerCompute) -> None:
    instance_id = make()
    key = provider.handoff_key(instance_id)
    assert key is not None
    inspected = provider.api.inspect_container(container_name(instance_id))
    listing = subprocess.run(
        ["docker", "exec", container_name(instance_id), "ps", "-eo", "args"], capture_output=True, text=True
    ).stdout
    shown = [where for where, text in (("inspect", str(inspected)), ("ps", listing)) if key in text]
    assert shown == []  # never the key itself in a message
    DockerCompute().adopt(instance_id, key)  # its digest is there: the key is accepted


def test_a_command_killing_its_process_group_leaves_the_instance_running(make, provider) -> None:
    instance_id = make()
    # a command (uid 1000) kills only its own processes: the helper is root's
    assert _portal.call(provider.execute, instance_id, "kill -9 0").exit_code == 137
    with pytest.raises(ChannelClosedError):  # as root it took its helper with it, as an exec helper's does
        _portal.call(lambda: provider.execute(instance_id, "kill -9 0", privileged=True))
    assert _portal.call(provider.execute, instance_id, "echo alive").stdout == "alive\n"


def test_a_gone_container_is_not_found_at_adopt_and_at_the_first_command(make, provider) -> None:
    first, second = make(), make()
    keys = [provider.handoff_key(first), provider.handoff_key(second)]
    assert None not in keys
    claimer = DockerCompute()
    claimer.adopt(second, str(keys[1]))
    for instance_id in (first, second):
        _portal.call(provider.shutdown, instance_id)
    with pytest.raises(InstanceNotFoundError):
        claimer.adopt(first, str(keys[0]))
    with pytest.raises(InstanceNotFoundError):  # the attach finds nothing: no hang, no exec
        _portal.call(claimer.execute, second, "true")


def test_a_second_attachs_go_line_puts_nothing_on_the_owners_reply_stream(make, provider) -> None:
    """The go line (``: NONCE``) of whatever attaches to a running main helper is a no-op: no reply
    of its own lands on the stream the owner reads (where it would join the body of the owner's
    next reply), only the reply of a request after it."""
    from praisonai.compute.providers.docker._attach import attach_unix, local_socket

    socket_path = local_socket(None)
    if socket_path is None:
        pytest.skip("the engine is not on a local unix socket")
    instance_id = make()
    assert _portal.call(provider.execute, instance_id, "true").exit_code == 0  # the owner attached
    sock, seen = attach_unix(socket_path, container_name(instance_id), 10)
    try:
        sock.sendall(b": second-go\n__p_ping second-ping\n")
        deadline = time.monotonic() + 20
        while b"second-ping 0" not in seen:
            assert time.monotonic() < deadline, seen
            seen += sock.recv(1 << 16)
    finally:
        sock.close()
    assert b"second-go" not in seen

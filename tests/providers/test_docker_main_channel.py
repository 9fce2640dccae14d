"""A docker instance's main channel: the helper on its container's main stdin, attached by the
process that owns the instance (its creator, or the process that adopted it with the handed-off
key), with real processes and a real engine. Every test removes what it made."""

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

import pytest

from praisonai import _portal
from praisonai._errors import ChannelClosedError, ConfigError, InstanceNotFoundError
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.providers.docker._attach import AttachTransport

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


def test_handed_off_instance_runs_in_another_process_without_docker_py(make, provider) -> None:
    instance_id = make()
    key = provider.handoff_key(instance_id)
    assert key is not None and provider.handoff_key(instance_id) is None  # given away once
    answer = _answer(_adopt(instance_id, key, "echo adopted; pwd"), key)
    assert answer == {"out": "adopted\n/workspace\n", "transport": "AttachTransport", "docker": False}
    # B is gone, and its helper with it: a second adopt of the same key gets an exec channel
    again = _answer(_adopt(instance_id, key, "echo again"), key)
    assert again["out"] == "again\n" and again["transport"] == "DockerExecTransport"


def test_a_wrong_key_is_refused_with_one_sentence(make, provider: DockerCompute) -> None:
    instance_id = make()
    with pytest.raises(ConfigError, match="not its main channel's") as caught:
        DockerCompute().adopt(instance_id, "@pz" + "0" * 32)
    assert provider.handoff_key(instance_id) not in str(caught.value)


def test_a_killed_owner_ends_the_helper_and_its_command(make, provider: DockerCompute) -> None:
    instance_id = make()
    key = provider.handoff_key(instance_id)
    assert key is not None
    owner = _adopt(instance_id, key, "true", "sleep 4321")
    try:
        answer = _answer(owner, key)
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

"""A silent network partition between the client and an SSH host (issue 11, defect 18).

The partition is real: iptables rules that drop every packet to and from the test sshd's port
(and nothing else), removed afterwards even when the test fails. The connection's liveness probes
(``SSHHost.keepalive_s`` x ``keepalive_count``, small here) must notice the silence: a call in flight
fails with ``ChannelClosedError`` (the command may have run) however long its timeout — even
``None`` — and the next call says the host cannot be reached; once the partition heals, calls work.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator

import anyio
import anyio.to_thread
import pytest

from praisonai import _portal
from praisonai._errors import ChannelClosedError, ProviderUnavailableError
from praisonai.compute.providers.ssh import SSHCompute, SSHHost, link_for
from praisonai.compute.testing.sshd import SSHServer, sshd_reason

#: Far above the detection bound (1 s x (2 + 1)): only a hang reaches it.
_HANG_GUARD_S = 60


def _rules(port: int) -> list[list[str]]:
    return [
        ["INPUT", "-p", "tcp", "--dport", str(port), "-j", "DROP"],
        ["OUTPUT", "-p", "tcp", "--sport", str(port), "-j", "DROP"],
    ]


def _iptables(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["iptables", "-w", *args], capture_output=True, text=True, check=False)


class Partition:
    """Drops the traffic of one TCP port in both directions while installed."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.installed: list[list[str]] = []

    def install(self) -> None:
        for rule in _rules(self.port):
            result = _iptables("-I", *rule)
            if result.returncode != 0:
                raise RuntimeError(f"iptables refused {rule}: {result.stderr.strip()}")
            self.installed.append(rule)

    def remove(self) -> None:
        while self.installed:
            _iptables("-D", *self.installed.pop())


def _iptables_reason() -> str | None:
    if shutil.which("iptables") is None:
        return "iptables is not installed (apt-get install -y iptables)"
    probe = Partition(9)  # the discard port: nothing of ours listens there
    try:
        probe.install()
    except RuntimeError as exc:
        return f"iptables cannot install rules here: {exc}"
    finally:
        probe.remove()
    return None


@pytest.fixture
def server(skip_unless_required: Callable[[str, str | None], None]) -> Iterator[SSHServer]:
    """An sshd of this test's own: partitioning the shared one would cut other tests' links.
    CI (PRAISONAI_REQUIRE_SSH=1, iptables installed by .ci/run) runs these, never skips them."""
    skip_unless_required("ssh", sshd_reason() or _iptables_reason())
    with SSHServer() as started:
        yield started


@pytest.fixture
def partition(server: SSHServer) -> Iterator[Partition]:
    cut = Partition(server.port)
    try:
        yield cut
    finally:
        cut.remove()


def _provider(server: SSHServer) -> SSHCompute:
    return SSHCompute(**server.connect_kwargs(keepalive_s=1, keepalive_count=2, connect_timeout=2))


@pytest.fixture
def instance(server: SSHServer, partition: Partition) -> Iterator[tuple[SSHCompute, str]]:
    provider = _provider(server)
    instance_id = _portal.call(provider.provision).instance_id
    try:
        yield provider, instance_id
    finally:
        partition.remove()
        _portal.call(provider.shutdown, instance_id)


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("timeout", [None, 600.0], ids=["no-timeout", "long-timeout"])
def test_a_partition_fails_a_running_command_and_the_next_call_cannot_reach(
    instance: tuple[SSHCompute, str], partition: Partition, timeout: float | None
) -> None:
    provider, instance_id = instance

    async def partitioned_while_running() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, lambda: (time.sleep(0.5), partition.install()))
            with pytest.raises(ChannelClosedError) as caught:
                with anyio.fail_after(_HANG_GUARD_S):
                    await provider.execute(instance_id, "sleep 120", timeout=timeout)
            assert caught.value.sent  # it may have run: never retried

    _portal.call(partitioned_while_running)
    with pytest.raises(ProviderUnavailableError, match="cannot reach"):
        _portal.call(provider.execute, instance_id, "true")
    partition.remove()
    assert _portal.call(provider.execute, instance_id, "echo healed").stdout == "healed\n"


@pytest.mark.usefixtures("home")
def test_a_partition_fails_a_file_write_in_flight(
    instance: tuple[SSHCompute, str], partition: Partition
) -> None:
    provider, instance_id = instance
    assert _portal.call(provider.execute, instance_id, "true").ok  # connected

    async def write_while_partitioned() -> None:
        with anyio.fail_after(_HANG_GUARD_S):
            await provider.write_file(instance_id, "big.bin", b"x" * (8 << 20))

    partition.install()
    with pytest.raises(ProviderUnavailableError):
        _portal.call(write_while_partitioned)
    partition.remove()
    assert _portal.call(provider.execute, instance_id, "echo healed").stdout == "healed\n"


@pytest.mark.usefixtures("home")
def test_a_quiet_healthy_connection_is_kept(instance: tuple[SSHCompute, str], server: SSHServer) -> None:
    """Probes are answered: idling for several probe periods neither closes nor replaces it."""
    provider, instance_id = instance
    assert _portal.call(provider.execute, instance_id, "true").ok
    link = link_for(SSHHost(**server.connect_kwargs(keepalive_s=1, keepalive_count=2, connect_timeout=2)))
    before = link.transports()
    time.sleep(5)
    assert link.transports() == before and all(t.is_active() for t in before)
    assert _portal.call(provider.execute, instance_id, "echo alive").stdout == "alive\n"

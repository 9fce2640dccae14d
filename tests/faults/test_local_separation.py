"""A command of an isolated local instance cannot reach what frames its results, nor the host
(issue 42, items 1 and 2), real bubblewrap.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kit import provisioned

from praisonai import _portal
from praisonai.compute.providers.local import LocalCompute

pytestmark = pytest.mark.usefixtures("bwrap_ok")


@pytest.fixture
def isolated() -> Iterator[tuple[LocalCompute, str]]:
    yield from provisioned(LocalCompute(isolate=True))


def test_no_command_holds_a_capability_or_remounts_the_system(isolated: tuple[LocalCompute, str]) -> None:
    """Started by root, bubblewrap keeps root's capabilities in its namespaces unless told not to:
    then a command could remount the host's read-only system writable and write it as root."""
    provider, iid = isolated
    probe = "grep -E '^Cap[A-Za-z]+:' /proc/self/status; mount -o remount,bind,rw /usr && echo REMOUNTED"

    async def scenario() -> list[str]:
        said = [(await provider.execute(iid, probe)).stdout]
        started = await provider.start_process(iid, probe)
        await provider.wait_process(iid, started.process_id, timeout=30)
        said.append((await provider.read_process_output(iid, started.process_id)).decode())
        session = await provider.open_session(iid)
        try:
            said.append((await session.run(probe)).stdout)
        finally:
            await session.close()
        return said

    for output in _portal.call(scenario):
        caps = dict(line.split(":") for line in output.splitlines() if line.startswith("Cap"))
        assert len(caps) == 5 and all(int(value, 16) == 0 for value in caps.values()), output
        assert "REMOUNTED" not in output

"""A session command that reaches its hard timeout (issue 26, item 8), on real local processes,
bubblewrap, docker and an sshd: the whole command line dies before the caller is told "timed
out" — the rest of the line, and what it started with ``&`` — and the session stays usable (in a
fresh shell). An ``idle_timeout`` is not a timeout: the command runs on.

Each case is a command line whose later part would leave a file behind; the check waits past the
point where it would have and looks for the file. Everything made is removed, also on failure.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import anyio
import pytest
from kit import Instance, provider_named, provisioned

from praisonai import _portal
from praisonai.compute.providers.local import LocalCompute
from praisonai.managed.shared import SharedCompute
from praisonai.runtime.session import ShellSession

# command line (writes the file named by {f} 3 s in, unless killed)
TIMED_OUT_LINES = [
    pytest.param("sleep 3; echo x > {f}", id="the-rest-of-the-line"),
    pytest.param("( sleep 3; touch {f} ) & sleep 30", id="a-background-job"),
    pytest.param("( setsid sh -c 'sleep 3; touch {f}' & ); sleep 30", id="a-detached-job"),
    pytest.param("trap '' INT; sleep 3; touch {f}", id="a-line-that-ignores-sigint"),
]


@pytest.fixture(scope="module", params=["local", "local-bwrap", "docker", "ssh"])
def instance(request: pytest.FixtureRequest) -> Iterator[Instance]:
    yield from provisioned(provider_named(request.param, request))


def exists(instance: Instance, name: str) -> bool:
    provider, instance_id = instance
    return _portal.call(provider.execute, instance_id, f"test -e {name}").exit_code == 0


@pytest.mark.parametrize("line", TIMED_OUT_LINES)
def test_a_timed_out_command_line_dies_whole_and_the_session_goes_on(instance: Instance, line: str) -> None:
    provider, instance_id = instance
    name = f"late-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        session: ShellSession = await provider.open_session(instance_id)
        try:
            r = await session.run(line.format(f=name), timeout=1)
            assert (r.timed_out, r.exit_code, r.running) == (True, 124, False), r
            await anyio.sleep(4)
            after = await session.run("echo usable")
            assert after.stdout == "usable\n", after
        finally:
            await session.close()

    try:
        _portal.call(main)
        assert not exists(instance, name), "the timed-out command line ran on after its answer"
    finally:
        _portal.call(provider.execute, instance_id, f"rm -f {name}")


def test_an_idle_timeout_is_not_a_timeout_the_command_runs_on(instance: Instance) -> None:
    provider, instance_id = instance
    name = f"idle-{uuid.uuid4().hex[:8]}"

    async def main() -> None:
        session: ShellSession = await provider.open_session(instance_id)
        try:
            r = await session.run(f"sleep 2; echo x > {name}", idle_timeout=0.5, timeout=30)
            assert (r.running, r.timed_out) == (True, False), r
            done = await session.read(timeout=30)
            assert (done.running, done.exit_code) == (False, 0), done
        finally:
            await session.close()

    try:
        _portal.call(main)
        assert exists(instance, name)
    finally:
        _portal.call(provider.execute, instance_id, f"rm -f {name}")


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("isolate", [False, True], ids=["local", "local-bwrap"])
def test_the_execute_command_tool_kills_its_timed_out_line(
    isolate: bool, request: pytest.FixtureRequest
) -> None:
    """The agents' tool (SharedCompute's sessions): its "timed out" answer comes after the kill."""
    if isolate:
        request.getfixturevalue("bwrap_ok")
    name = f"late-{uuid.uuid4().hex[:8]}"
    with SharedCompute(compute=LocalCompute(isolate=isolate)) as shared:
        execute_command = shared.build_tools()[0]
        answer = execute_command(f"( sleep 3; touch {name}.bg ) & sleep 3; echo x > {name}", timeout=1)
        assert answer.startswith("Error (timed out after 1s)"), answer
        anyio.run(anyio.sleep, 4)
        assert execute_command(f"ls {name}* 2>/dev/null; echo listed") == "listed"

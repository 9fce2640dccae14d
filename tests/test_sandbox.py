"""The Sandbox handles: sync/async parity, ownership, check=True, use inside a running loop."""

from __future__ import annotations

import asyncio
import inspect

import anyio
import pytest

from praisonai import AsyncSandbox, CommandFailedError, CommandTimeoutError, Sandbox, SandboxClosedError


def test_sync_face_mirrors_every_async_method() -> None:
    async_api = {n for n, f in vars(AsyncSandbox).items() if inspect.iscoroutinefunction(f) and not n.startswith("_")}
    async_api -= {"aclose"}  # the sync spelling is close()
    missing = {n for n in async_api if not callable(getattr(Sandbox, n, None))}
    assert not missing


def test_owned_sandbox_round_trip_and_close() -> None:
    with Sandbox.create("local", env={"GREETING": "hi"}) as sb:
        sb.write_file("/workspace/a.bin", b"\x00\xff")
        assert sb.read_file("a.bin") == b"\x00\xff"
        assert sb.exec("echo $GREETING").stdout == "hi\n"
        with pytest.raises(CommandFailedError) as info:
            sb.exec("exit 4", check=True)
        assert info.value.result.exit_code == 4
        with pytest.raises(CommandTimeoutError):
            sb.exec("sleep 5", timeout=0.5, check=True)
    assert sb.closed
    with pytest.raises(SandboxClosedError):
        sb.exec("true")
    sb.close()  # idempotent


def test_connect_borrows_and_does_not_shut_down() -> None:
    with Sandbox.create("local") as owner:
        borrowed = Sandbox.connect(owner.id)
        borrowed.close()
        assert owner.exec("echo alive").stdout == "alive\n"


def test_sync_face_inside_a_running_event_loop() -> None:
    async def main() -> str:
        with Sandbox.create("local") as sb:
            return sb.exec("echo $((2+2))").stdout

    assert asyncio.run(main()) == "4\n"


def test_async_sandbox() -> None:
    async def main() -> None:
        async with await AsyncSandbox.create("local") as sb:
            await sb.write_file("x.txt", "text")
            assert (await sb.exec("cat x.txt")).stdout == "text"

    anyio.run(main)


@pytest.mark.usefixtures("docker_ok")
def test_docker_sandbox_end_to_end() -> None:
    with Sandbox.create("docker") as sb:
        assert sb.exec("python3 -c 'print(2+2)'").stdout == "4\n"

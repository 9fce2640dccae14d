"""``praisonai compute shell`` on a Modal instance (through the real SDK against its wire fake,
whose pty exec is a ``docker exec`` with a tty), in a real pseudo-terminal: typed keys reach the
sandbox's shell, its exit code comes back, the terminal's mode is restored."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import anyio
import pytest

pytest.importorskip("modal")

from served import IMAGE
from test_compute_shell import _in_a_terminal

pytestmark = pytest.mark.usefixtures("docker_ok")


@pytest.fixture
def modal_instance(home: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    import modal
    from fakes.modal import ModalFake

    from praisonai.compute.registry import compute_provider

    fake = ModalFake().start()
    try:
        for key, value in {**fake.env(), "PRAISONAI_MODAL_IMAGE": IMAGE}.items():
            monkeypatch.setenv(key, value)  # the CLI's process inherits them
        provider = compute_provider("modal")
        instance_id = anyio.run(provider.provision).instance_id
        try:
            yield instance_id
        finally:
            anyio.run(provider.shutdown, instance_id)
    finally:
        fake.stop()
        gc.collect()  # the SDK's handles, while they are ours (as tests/served.py serves modal)
        gc.freeze()
        modal.Client._set_env_client(None)  # the next fake gets a client of its own


def test_shell_types_into_the_sandbox_and_passes_its_exit_code(modal_instance: str) -> None:
    out = _in_a_terminal(modal_instance)
    lines = [line.strip() for line in out.split(b"\n")]
    assert b"\rhi\r\n" in out  # the command's output, not the echo of what was typed (h''i)
    assert b"rc=3" in lines
    after = out[out.index(b"rc=") :]
    assert lines[0] in after.split(b"\r\n"), "the terminal's mode was not restored"

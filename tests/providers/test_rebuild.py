"""A provider rebuilt in a fresh process from its ledger row (its options) reaches the same instance."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import praisonai
from praisonai import _portal
from praisonai._ledger import Ledger
from praisonai.compute.base import ComputeProvider
from praisonai.compute.testing.sshd import SSHServer

_REPO = Path(praisonai.__file__).parents[1]  # children run from here, so they import this tree
# Rebuilds the provider of the ledger row of instance argv[1], reads the marker file through it,
# then shuts the instance down; prints what it saw as JSON.
_REBUILD = """
import json, sys, anyio
from praisonai._ledger import Ledger
from praisonai.compute.registry import provider_for_record

async def main(instance_id):
    entry = Ledger.default().get(instance_id)
    provider = provider_for_record(entry.provider, entry.spec)
    info = await provider.get_status(instance_id)
    marker = (await provider.execute(instance_id, "cat marker")).stdout
    seen = {"options": provider.options.to_record(), "endpoint": info.endpoint, "marker": marker}
    print(json.dumps(seen))
    return await provider.shutdown(instance_id)

assert anyio.run(main, sys.argv[1]) is True
"""


def _local(request: pytest.FixtureRequest, tmp_path: Path) -> ComputeProvider:
    from praisonai.compute.providers.local import LocalCompute

    return LocalCompute(root=tmp_path / "elsewhere")


def _docker(request: pytest.FixtureRequest, tmp_path: Path) -> ComputeProvider:
    request.getfixturevalue("docker_ok")
    from praisonai.compute.providers.docker import DockerCompute

    return DockerCompute(pull=False)


def _ssh(request: pytest.FixtureRequest, tmp_path: Path) -> ComputeProvider:
    sshd: SSHServer = request.getfixturevalue("sshd")
    from praisonai.compute.providers.ssh import SSHCompute

    return SSHCompute(**sshd.connect_kwargs())


@pytest.mark.parametrize("build", [_local, _docker, _ssh], ids=["local", "docker", "ssh"])
def test_a_fresh_process_rebuilds_the_provider_from_the_ledger_and_reaches_the_instance(
    build: Callable[[pytest.FixtureRequest, Path], ComputeProvider],
    request: pytest.FixtureRequest,
    home: Path,
    tmp_path: Path,
    make: Callable[..., tuple[ComputeProvider, str]],
) -> None:
    provider = build(request, tmp_path)
    _, instance_id = make(provider)
    _portal.call(provider.execute, instance_id, "echo here > marker")
    endpoint = _portal.call(provider.get_status, instance_id).endpoint
    entry = Ledger.default().get(instance_id)
    assert entry is not None and entry.spec == provider.options.to_record()
    assert entry.spec["type"] == provider.name
    r = subprocess.run(
        [sys.executable, "-c", _REBUILD, instance_id], capture_output=True, text=True, timeout=120, cwd=_REPO
    )
    assert r.returncode == 0, r.stderr
    seen: dict[str, Any] = json.loads(r.stdout)
    assert seen == {"options": entry.spec, "endpoint": endpoint, "marker": "here\n"}
    assert Ledger.default().get(instance_id) is None  # the child's shutdown removed the row

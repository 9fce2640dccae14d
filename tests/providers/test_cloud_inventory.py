"""Cloud instances made by one process are seen and stopped by another: ``praisonai compute ps``
and ``stop`` in a child process, against the vendors' wire fakes (their sandboxes are docker
containers). The child reads the vendor's usual variables, as a user's terminal would."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError
from praisonai._types import InstanceStatus
from praisonai.compute.base import ComputeProvider

pytestmark = pytest.mark.usefixtures("docker_ok", "collect_sdk_garbage")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from praisonai.cli import main; main()", *args],
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture(params=["e2b", "daytona", "tenki"])
def cloud(
    request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ComputeProvider]:
    """A provider of the vendor pointed at its fake through the environment the CLI child inherits."""
    pytest.importorskip(request.param)
    if request.param == "e2b":
        from fakes.e2b import E2BFake

        from praisonai.compute.providers.e2b import E2BCompute

        with E2BFake() as fake:
            for key, value in fake.env().items():
                monkeypatch.setenv(key, value)
            yield E2BCompute()
    elif request.param == "tenki":
        from fakes.tenki import TenkiFake

        from praisonai.compute.providers.tenki import TenkiCompute

        with TenkiFake() as tenki_fake:
            monkeypatch.setenv("TENKI_API_KEY", "tk_fake")
            monkeypatch.setenv("TENKI_API_ENDPOINT", tenki_fake.base_url)
            yield TenkiCompute()
    else:
        from fakes.daytona import DaytonaFake

        from praisonai.compute.providers.daytona import DaytonaCompute

        with DaytonaFake() as fake:
            monkeypatch.setenv("DAYTONA_API_KEY", "fake-key")
            monkeypatch.setenv("DAYTONA_API_URL", fake.api_url)
            yield DaytonaCompute()


def test_an_instance_is_listed_and_stopped_from_another_process(cloud: ComputeProvider) -> None:
    info = _portal.call(cloud.provision)
    try:
        ps = cli("compute", "ps", "--json")
        assert ps.returncode == 0, ps.stderr
        rows = {row["instance"]: row for row in json.loads(ps.stdout)}
        assert rows[info.instance_id]["provider"] == cloud.name, rows
        stop = cli("compute", "stop", info.instance_id)
        assert stop.returncode == 0, stop.stderr
        try:
            status = _portal.call(cloud.get_status, info.instance_id).status
        except InstanceNotFoundError:
            status = InstanceStatus.STOPPED
        assert status == InstanceStatus.STOPPED, status
    finally:
        assert _portal.call(cloud.shutdown, info.instance_id) in (True, False)

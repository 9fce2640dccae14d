"""Pause and resume on Daytona through the real ``daytona`` SDK against its wire fake
(``fakes.daytona``): ``stop``/``start`` of the same sandbox, its files kept, deletion off while
paused (our sandboxes are otherwise deleted when they stop), ``paused`` in status and list. What
every provider's pause must do is checked by the conformance suite (``compute.testing.pause``);
here, what Daytona's does itself."""

from __future__ import annotations

import pytest

pytest.importorskip("daytona", reason="the daytona SDK is not installed (pip install 'praisonai[daytona]')")

from fakes.daytona import DaytonaFake

from praisonai import _portal
from praisonai._errors import PraisonAIError
from praisonai._types import InstanceStatus
from praisonai.compute.providers.daytona import DaytonaCompute

pytestmark = pytest.mark.usefixtures("docker_ok")

PROVIDER = "daytona"  # the fake and provider fixtures: tests/providers/conftest.py


def test_a_pause_stops_the_same_sandbox_kept(provider: DaytonaCompute, fake: DaytonaFake) -> None:
    iid = _portal.call(provider.provision).instance_id
    try:
        sandbox_id = fake.find(iid)["id"]  # type: ignore[index]
        assert _portal.call(provider.pause, iid).status is InstanceStatus.PAUSED
        assert fake.find(iid)["state"] == "stopped"  # type: ignore[index]
        assert fake.find(iid)["autoDeleteInterval"] == -1  # type: ignore[index]  # kept while stopped
        assert _portal.call(provider.resume, iid).status is InstanceStatus.RUNNING
        assert fake.find(iid)["id"] == sandbox_id  # type: ignore[index]
        assert fake.find(iid)["autoDeleteInterval"] == 0  # type: ignore[index]  # idle stop deletes again
    finally:
        _portal.call(provider.shutdown, iid)


def test_resume_of_a_running_instance_is_a_no_op(provider: DaytonaCompute, fake: DaytonaFake) -> None:
    iid = _portal.call(provider.provision).instance_id
    try:
        before = len(fake.requests)
        assert _portal.call(provider.resume, iid).status is InstanceStatus.RUNNING
        assert not [r for r in fake.requests[before:] if r[1].endswith(("/start", "/stop", "/autodelete"))]
    finally:
        _portal.call(provider.shutdown, iid)


def test_a_vendor_error_is_ours_from_the_sdks(provider: DaytonaCompute, fake: DaytonaFake) -> None:
    from daytona import DaytonaError

    iid = _portal.call(provider.provision).instance_id
    try:
        fake.fail_next(500)  # the sandbox lookup before the stop
        with pytest.raises(PraisonAIError) as caught:
            _portal.call(provider.pause, iid)
        assert isinstance(caught.value.__cause__, DaytonaError)
        assert fake.find(iid)["state"] == "started"  # type: ignore[index]
    finally:
        _portal.call(provider.shutdown, iid)

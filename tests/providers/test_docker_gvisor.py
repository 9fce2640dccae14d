"""gVisor: docker instances under ``runtime="runsc"`` pass the whole conformance suite, really run
under gVisor (the kernel banner), and every case that cannot be gVisor is refused with one
sentence and leaves nothing behind.

Needs an engine with ``runsc`` registered (``.ci/run`` registers it on the CI's dockerd with
``--network=host``, and ``runsc-nonet`` with ``--network=none`` for the no-network case); skipped
elsewhere, failed when ``PRAISONAI_REQUIRE_GVISOR=1``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from served import TARGETS, run_check

from praisonai import _portal
from praisonai._errors import ConfigError, ProvisionError, UnsupportedFeatureError
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_PROVIDER
from praisonai.compute.providers.docker import DockerCompute, _runtime, container_name
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.testing import CHECKS, Context

pytestmark = pytest.mark.usefixtures("docker_ok")


def _runtimes() -> dict[str, Any]:
    return DockerCompute().api.info().get("Runtimes") or {}


@pytest.fixture(scope="module")
def gvisor(docker_ok: None, skip_unless_required: Callable[[str, str | None], None]) -> DockerCompute:
    missing = None if "runsc" in _runtimes() else "the Docker engine has no runsc runtime registered"
    skip_unless_required("gvisor", missing)
    return DockerCompute(runtime="runsc")


@pytest.fixture(scope="module")
def ctx(gvisor: DockerCompute) -> Iterator[Context]:
    info = _portal.call(gvisor.provision)
    try:
        rebuilt = "resolve_compute({'type': 'docker', 'runtime': 'runsc'})"
        yield Context(gvisor, info.instance_id, provider_expr=rebuilt)
    finally:
        _portal.call(gvisor.shutdown, info.instance_id)


def _ours() -> set[str]:
    rows = DockerCompute().api.containers(all=True, filters={"label": f"{LABEL_PROVIDER}=docker"})
    return {row["Id"] for row in rows}


@pytest.mark.parametrize("check", list(CHECKS))
def test_conformance_under_gvisor(ctx: Context, check: str) -> None:
    run_check(TARGETS["docker"], ctx, check)  # a docker variant: expected to pass as docker does


def test_the_kernel_is_gvisor(ctx: Context) -> None:
    out = _portal.call(ctx.sh, "dmesg | head -n 1; uname -r").stdout
    assert _runtime.GVISOR_BANNER in out, out
    host = DockerCompute().api.inspect_container(container_name(ctx.instance_id))["HostConfig"]
    assert host["Runtime"] == "runsc"


def test_the_file_and_config_ask_for_it(gvisor: DockerCompute) -> None:
    info = _portal.call(DockerCompute().provision, {"runtime": "runsc", "network": "none"})
    try:
        out = _portal.call(DockerCompute().execute, info.instance_id, "dmesg | head -n 1").stdout
        assert _runtime.GVISOR_BANNER in out
    finally:
        _portal.call(DockerCompute().shutdown, info.instance_id)


def test_a_runc_kernel_is_refused_not_used(gvisor: DockerCompute) -> None:
    """The check itself, against a real runc instance: what a runtime that is not gVisor (an
    engine that ignores the request, a misregistered name) would start."""
    plain = DockerCompute()
    info = _portal.call(plain.provision, {"network": "none"})
    try:
        with pytest.raises(ProvisionError, match="not gVisor"):
            _runtime.confirm(plain.api, container_name(info.instance_id), "runsc", ComputeConfig())
    finally:
        _portal.call(plain.shutdown, info.instance_id)


def test_an_engine_without_runsc_is_refused_before_anything_is_made(gvisor: DockerCompute) -> None:
    provider = DockerCompute(runtime="runsc")
    provider._api = _WithoutRunsc(gvisor.api)  # the real engine, which says it has no runsc
    before = _ours()
    with pytest.raises(ProvisionError, match="has no 'runsc' runtime"):
        _portal.call(provider.provision, {"network": "none"})
    assert _ours() <= before


def test_a_runsc_without_network_refuses_unrestricted(gvisor: DockerCompute) -> None:
    """Under runsc registered with --network=none the sandbox has only loopback."""
    if "runsc-nonet" not in _runtimes():
        pytest.skip("no runsc-nonet runtime registered (.ci/run registers one)")
    api = gvisor.api
    made = api.create_container(
        "praisonai-sandbox:latest", ["sleep", "60"], host_config=api.create_host_config(runtime="runsc-nonet")
    )
    try:
        api.start(made)
        with pytest.raises(ProvisionError, match="has no network"):
            _runtime.confirm(api, made["Id"], "runsc", ComputeConfig())
        _runtime.confirm(api, made["Id"], "runsc", ComputeConfig(network="none"))  # fine without
    finally:
        api.remove_container(made, force=True)


def test_conflicts_and_other_providers_are_refused(gvisor: DockerCompute) -> None:
    with pytest.raises(ConfigError, match="made with runtime='runsc'"):
        _portal.call(gvisor.provision, {"runtime": "runc"})
    with pytest.raises(UnsupportedFeatureError, match="runtime='runsc'"):
        _portal.call(LocalCompute().provision, {"runtime": "runsc"})
    assert not gvisor.runs_once({}), "a one-shot run would start before its kernel is checked"


class _WithoutRunsc:
    """The real engine's client, but ``info`` lists no runsc."""

    def __init__(self, api: Any) -> None:
        self._api = api

    def info(self) -> dict[str, Any]:
        found = dict(self._api.info())
        found["Runtimes"] = {k: v for k, v in (found.get("Runtimes") or {}).items() if k != "runsc"}
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._api, name)

"""The packaged conformance suite against every real provider on this machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from praisonai import _portal
from praisonai.compute.base import ComputeProvider
from praisonai.compute.providers.docker import DockerCompute
from praisonai.compute.providers.local import LocalCompute
from praisonai.compute.providers.ssh import SSHCompute
from praisonai.compute.testing import CHECKS, Context, skip_reason

PROVIDERS = ["local", "local-bwrap", "docker", "ssh"]
# A provider's known gaps, each with its reason (none today).
KNOWN_FAILURES: dict[str, dict[str, str]] = {}


def _make(name: str, request: pytest.FixtureRequest) -> tuple[ComputeProvider, str]:
    """The provider, and the expression that rebuilds it in a child process."""
    if name == "local":
        return LocalCompute(), "LocalCompute()"
    if name == "local-bwrap":
        request.getfixturevalue("bwrap_ok")
        return LocalCompute(isolate=True), "LocalCompute(isolate=True)"
    if name == "docker":
        request.getfixturevalue("docker_ok")
        return DockerCompute(), "resolve_compute('docker')"
    kwargs = request.getfixturevalue("sshd").connect_kwargs()
    return SSHCompute(**kwargs), f"SSHCompute(**{kwargs!r})"


@pytest.fixture(scope="module", params=PROVIDERS)
def ctx(request: pytest.FixtureRequest) -> Iterator[Context]:
    provider, expr = _make(request.param, request)
    info = _portal.call(provider.provision)
    try:
        yield Context(provider, info.instance_id, provider_expr=expr)
    finally:
        _portal.call(provider.shutdown, info.instance_id)


@pytest.mark.parametrize("check", list(CHECKS))
def test_conformance(ctx: Context, check: str) -> None:
    reason = KNOWN_FAILURES.get(ctx.provider.name, {}).get(check)
    if reason:
        pytest.xfail(reason)
    not_applicable = skip_reason(check, ctx.provider)
    assert not_applicable is None, f"every check applies to the built-in providers: {not_applicable}"
    _portal.call(CHECKS[check], ctx)

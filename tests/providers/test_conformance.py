"""The packaged conformance suite against every real provider on this machine."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from praisonai import _portal
from praisonai.compute.docker import DockerCompute
from praisonai.compute.local import LocalCompute
from praisonai.compute.testing import CHECKS, Context

PROVIDERS = {
    "local": ("LocalCompute()", None),
    "local-bwrap": ("LocalCompute(isolate=True)", "bwrap_ok"),
    "docker": ("resolve_compute('docker')", "docker_ok"),
}
# A provider's known gaps, each with its reason (none today).
KNOWN_FAILURES: dict[str, dict[str, str]] = {}


@pytest.fixture(scope="module", params=list(PROVIDERS))
def ctx(request: pytest.FixtureRequest) -> Iterator[Context]:
    expr, needs = PROVIDERS[request.param]
    if needs:
        request.getfixturevalue(needs)
    provider = LocalCompute(isolate=True) if "isolate" in expr else (
        LocalCompute() if request.param == "local" else DockerCompute()
    )
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
    _portal.call(CHECKS[check], ctx)

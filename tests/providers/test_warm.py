"""Warm pools on real docker: ready instances handed out with the claimer's env, refilled, cleaned up."""

from __future__ import annotations

import pytest

from praisonai import _portal
from praisonai._errors import PraisonAIError
from praisonai.compute.providers.docker import DockerCompute, container_name
from praisonai.compute.warm import WarmPool

pytestmark = pytest.mark.usefixtures("docker_ok")


def test_claims_bind_env_after_the_claim_and_the_pool_refills_and_cleans_up() -> None:
    provider = DockerCompute()

    async def scenario() -> tuple[list[str], list[str], list[str]]:
        claimed, outputs = [], []
        async with WarmPool(provider, {"env": {"SHARED": "s"}}, size=2) as pool:
            await pool.wait_ready()
            waiting = [info.instance_id for info in pool._ready]
            for instance_id in waiting:  # nothing secret in a pooled instance, inside or in its config
                assert "TOKEN" not in (await provider.execute(instance_id, "env")).stdout
                config = provider.api.inspect_container(container_name(instance_id))["Config"]
                assert not any(e.startswith(("TOKEN=", "SHARED=")) for e in config["Env"] or [])
            for token in ("t1", "t2", "t3"):  # the third claim finds the pool refilled (or makes one)
                info = await pool.claim(env={"TOKEN": token})
                claimed.append(info.instance_id)
                outputs.append((await provider.execute(info.instance_id, 'echo "$SHARED $TOKEN"')).stdout)
            await pool.wait_ready()
            unclaimed = [info.instance_id for info in pool._ready]
        return claimed, outputs, unclaimed

    claimed, outputs, unclaimed = _portal.call(scenario)
    try:
        assert outputs == ["s t1\n", "s t2\n", "s t3\n"]
        assert len(set(claimed)) == 3 and unclaimed and not set(unclaimed) & set(claimed)
        left = {i.instance_id for i in _portal.call(provider.list_instances)}
        assert not set(unclaimed) & left, "close() left unclaimed instances running"
        assert set(claimed) <= left, "claimed instances belong to their claimer"
    finally:
        for instance_id in claimed:
            _portal.call(provider.shutdown, instance_id)


@pytest.mark.alone  # the fill must finish before the first claim
def test_entering_fills_the_pool_so_the_first_claim_is_warm() -> None:
    provider = DockerCompute()
    before = {i.instance_id for i in _portal.call(provider.list_instances)}

    async def scenario() -> tuple[list[str], str]:
        async with WarmPool(provider, size=2) as pool:
            waiting = [info.instance_id for info in pool._ready]  # no wait_ready(): entering filled it
            info = await pool.claim()
        return waiting, info.instance_id

    waiting, first = _portal.call(scenario)
    try:
        assert len(waiting) == 2, "entering the pool returned before it was full"
        assert first in waiting, "the first claim provisioned on the spot instead of taking a warm one"
        left = {i.instance_id for i in _portal.call(provider.list_instances)} - before
        assert left == {first}, f"only the claimed instance may outlive the pool, found {left}"
    finally:
        _portal.call(provider.shutdown, first)


def test_a_pool_that_cannot_be_filled_raises_on_entry_and_leaves_nothing() -> None:
    provider = DockerCompute(image="praisonai-no-such-image:latest")
    before = {i.instance_id for i in _portal.call(provider.list_instances)}

    async def scenario() -> None:
        async with WarmPool(provider, size=2):
            pytest.fail("entered a pool none of whose instances can be made")

    with pytest.raises(PraisonAIError, match="praisonai-no-such-image"):
        _portal.call(scenario)
    assert {i.instance_id for i in _portal.call(provider.list_instances)} == before

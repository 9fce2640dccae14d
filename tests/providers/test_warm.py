"""Warm pools on real docker: ready instances handed out with the claimer's env, refilled, cleaned up."""

from __future__ import annotations

import pytest

from praisonai import _portal
from praisonai.compute.docker import DockerCompute, container_name
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

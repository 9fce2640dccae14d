"""Our providers as the compute of PraisonAI's own SDK: praisonaiagents' SharedCompute (what its
AgentTeam(tools_run_on=...) uses) drives our DockerCompute end to end."""

from __future__ import annotations

import pytest

from praisonai import _portal
from praisonai._errors import InstanceNotFoundError
from praisonai.compute.docker import DockerCompute

pytestmark = pytest.mark.usefixtures("docker_ok")


def test_praisonaiagents_shared_compute_runs_on_our_docker_provider() -> None:
    shared_compute = pytest.importorskip("praisonaiagents.managed.shared_compute")
    provider = DockerCompute()
    with shared_compute.SharedCompute(provider) as shared:
        tools = {t.__name__: t for t in shared.build_tools()}
        assert tools["execute_command"]("echo hi; pwd") == "hi\n/workspace"
        assert tools["write_file"]("notes/a.txt", "it's\nexact") == "Wrote notes/a.txt"
        assert tools["read_file"]("notes/a.txt") == "it's\nexact"
        assert tools["execute_command"]("echo err >&2; exit 3") == "Error (exit 3): err"
        instance_id = shared.instance_id
    with pytest.raises(InstanceNotFoundError):
        _portal.call(provider.get_status, instance_id)

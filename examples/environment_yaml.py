"""environment.yaml — the repository declares what its agents' tools run in.

Every path that provisions reads it (Sandbox, SharedCompute, AgentTeam/AgentFlow, ManagedAgent,
`praisonai sandbox run`, `praisonai managed run`); arguments you pass win over it. Here a
ManagedAgent names no compute, so the file's `backend:` chooses it, and its env and setup are
in place before the first tool runs. PraisonAI's examples/python/managed-agents/12_environment_setup.py,
with the environment in a file instead of the config.

Needs: Docker with the sandbox image (see README), and a model: OPENAI_API_KEY
(OPENAI_BASE_URL for any OpenAI-compatible endpoint).
Run:   python3 examples/environment_yaml.py
"""

import asyncio
import subprocess
import sys
from pathlib import Path

from praisonai import Agent, LocalManagedConfig, ManagedAgent

ENVIRONMENT = Path(__file__).with_name("environment.yaml")

# `praisonai env validate` checks the file (every problem as file:line: key: what is allowed)
subprocess.run([sys.executable, "-m", "praisonai", "env", "validate", str(ENVIRONMENT)], check=True)

managed = ManagedAgent(
    provider="local",
    environment=ENVIRONMENT,  # the default: .praisonai/environment.yaml found from the working directory
    config=LocalManagedConfig(
        model="gpt-4o-mini",
        system="You are a helpful coding assistant. Be concise.",
        name="EnvironmentAgent",
    ),
)
agent = Agent(name="env-agent", backend=managed)


async def main() -> None:
    info = await managed.provision_compute()
    print(f"[1] {info.provider} instance {info.instance_id}, as {ENVIRONMENT.name} says")

    result = await managed.execute_in_compute("echo MODE=$MODE in $(pwd); cat /opt/setup.txt")
    print("[2]", result["stdout"].strip().replace("\n", " / "))

    print("[3] Agent:", agent.start("Write report.txt with what you found."))
    result = await managed.execute_in_compute("ls /workspace")
    print(f"[4] /workspace holds: {result['stdout'].split()}")

    await managed.shutdown_compute()
    print("[5] Instance removed.")


asyncio.run(main())

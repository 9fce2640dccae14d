"""Docker compute — tools in a Docker container.

The agent loop runs in this process; its shell and file tools run in one container of
praisonai-sandbox:latest (PRAISONAI_DOCKER_IMAGE for another image). Written as PraisonAI's
provider examples (examples/python/managed-agents/provider/) are: build, provision, run a command,
let the agent write a file, read it back, shut down.

Needs: a Docker engine (DOCKER_HOST) with the sandbox image (see README), and a model:
       OPENAI_API_KEY (OPENAI_BASE_URL for any OpenAI-compatible endpoint).
Run:   python3 examples/docker_compute.py
"""

import asyncio

from praisonai import Agent, LocalManagedConfig, ManagedAgent

managed = ManagedAgent(
    provider="local",
    compute="docker",
    config=LocalManagedConfig(
        model="gpt-4o-mini",
        system="You are a helpful coding assistant. Be concise.",
        name="DockerAgent",
    ),
)
agent = Agent(name="docker-agent", backend=managed)


async def main() -> None:
    info = await managed.provision_compute(idle_timeout_s=120)  # stops itself after 2 idle minutes
    print(f"[1] Docker container: {info.instance_id} ({info.status.value})")

    result = await managed.execute_in_compute("echo $((42 * 13)) from $(uname -s)")
    print(f"[2] Command: {result['stdout'].strip()} (exit {result['exit_code']})")

    print("[3] Agent:", agent.start("Write hello.txt with a one-line greeting."))
    result = await managed.execute_in_compute("cat hello.txt")
    print(f"[4] hello.txt in the container: {result['stdout'].strip()!r}")

    print(f"[5] Usage: in={managed.total_input_tokens}, out={managed.total_output_tokens}")
    await managed.shutdown_compute()
    print("[6] Docker container removed.")


asyncio.run(main())

"""Fly.io compute — tools in a Fly Machine.

The agent loop runs in this process; its shell and file tools run in a Fly Machine of the app
FLY_APP_NAME. Written as PraisonAI's provider examples (examples/python/managed-agents/provider/)
are: build, provision, run a command, let the agent write a file, read it back, shut down.

Needs: pip install 'praisonai[flyio]', FLY_API_TOKEN (`fly auth token`), FLY_APP_NAME (an app you
       made with `fly apps create`; FLY_API_HOSTNAME for another endpoint), and a model:
       OPENAI_API_KEY (OPENAI_BASE_URL for any OpenAI-compatible endpoint).
Run:   python3 examples/flyio_compute.py
"""

import asyncio

from praisonai import Agent, LocalManagedConfig, ManagedAgent

managed = ManagedAgent(
    provider="local",
    compute="flyio",
    config=LocalManagedConfig(
        model="gpt-4o-mini",
        system="You are a helpful coding assistant. Be concise.",
        name="FlyioAgent",
    ),
)
agent = Agent(name="flyio-agent", backend=managed)


async def main() -> None:
    info = await managed.provision_compute(idle_timeout_s=120)  # stops itself after 2 idle minutes
    print(f"[1] Fly Machine: {info.instance_id} ({info.status.value})")

    result = await managed.execute_in_compute("echo $((42 * 13)) from $(uname -s)")
    print(f"[2] Command: {result['stdout'].strip()} (exit {result['exit_code']})")

    print("[3] Agent:", agent.start("Write hello.txt with a one-line greeting."))
    result = await managed.execute_in_compute("cat hello.txt")
    print(f"[4] hello.txt in the machine: {result['stdout'].strip()!r}")

    print(f"[5] Usage: in={managed.total_input_tokens}, out={managed.total_output_tokens}")
    await managed.shutdown_compute()
    print("[6] Fly Machine removed.")


asyncio.run(main())

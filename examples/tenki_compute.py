"""Tenki compute — tools in a Tenki sandbox (a microVM).

The agent loop runs in this process; its shell and file tools run in a Tenki sandbox of the key's
workspace. Written as PraisonAI's provider examples (examples/python/managed-agents/provider/)
are: build, provision, run a command, let the agent write a file, read it back, shut down.

Needs: pip install 'praisonai[tenki]', TENKI_API_KEY (a tk_ key; TENKI_API_ENDPOINT for another
       endpoint), and a model: OPENAI_API_KEY (OPENAI_BASE_URL for any OpenAI-compatible
       endpoint).
Run:   python3 examples/tenki_compute.py
"""

import asyncio

from praisonai import Agent, LocalManagedConfig, ManagedAgent

managed = ManagedAgent(
    provider="local",
    compute="tenki",
    config=LocalManagedConfig(
        model="gpt-4o-mini",
        system="You are a helpful coding assistant. Be concise.",
        name="TenkiAgent",
    ),
)
agent = Agent(name="tenki-agent", backend=managed)


async def main() -> None:
    info = await managed.provision_compute(idle_timeout_s=120)  # stops itself after 2 idle minutes
    print(f"[1] Tenki sandbox: {info.instance_id} ({info.status.value})")

    result = await managed.execute_in_compute("echo $((42 * 13)) from $(uname -s)")
    print(f"[2] Command: {result['stdout'].strip()} (exit {result['exit_code']})")

    print("[3] Agent:", agent.start("Write hello.txt with a one-line greeting."))
    result = await managed.execute_in_compute("cat hello.txt")
    print(f"[4] hello.txt in the sandbox: {result['stdout'].strip()!r}")

    print(f"[5] Usage: in={managed.total_input_tokens}, out={managed.total_output_tokens}")
    await managed.shutdown_compute()
    print("[6] Tenki sandbox removed.")


asyncio.run(main())

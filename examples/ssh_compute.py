"""SSH compute — tools in a workspace on a host you can SSH into.

The agent loop runs in this process; its shell and file tools run in a workspace directory on that
host (~/.praisonai/instances/<id>). Written as PraisonAI's provider examples
(examples/python/managed-agents/provider/) are: build, provision, run a command, let the agent
write a file, read it back, shut down.

Needs: pip install 'praisonai[ssh]', PRAISONAI_SSH_HOSTS=user@host[:port] (comma-separated for a
       pool), PRAISONAI_SSH_KEY (a key file) and PRAISONAI_SSH_KNOWN_HOSTS (the host's key must be
       known), and a model: OPENAI_API_KEY (OPENAI_BASE_URL for any OpenAI-compatible endpoint).
Run:   python3 examples/ssh_compute.py
"""

import asyncio

from praisonai import Agent, LocalManagedConfig, ManagedAgent

managed = ManagedAgent(
    provider="local",
    compute="ssh",
    config=LocalManagedConfig(
        model="gpt-4o-mini",
        system="You are a helpful coding assistant. Be concise.",
        name="SSHAgent",
    ),
)
agent = Agent(name="ssh-agent", backend=managed)


async def main() -> None:
    info = await managed.provision_compute(idle_timeout_s=120)  # stops itself after 2 idle minutes
    print(f"[1] SSH workspace: {info.instance_id} ({info.status.value})")

    result = await managed.execute_in_compute("echo $((42 * 13)) from $(uname -s)")
    print(f"[2] Command: {result['stdout'].strip()} (exit {result['exit_code']})")

    print("[3] Agent:", agent.start("Write hello.txt with a one-line greeting."))
    result = await managed.execute_in_compute("cat hello.txt")
    print(f"[4] hello.txt in the workspace: {result['stdout'].strip()!r}")

    print(f"[5] Usage: in={managed.total_input_tokens}, out={managed.total_output_tokens}")
    await managed.shutdown_compute()
    print("[6] SSH workspace removed.")


asyncio.run(main())

"""The managed local loop — ManagedAgent with LocalManagedConfig and compute=.

The loop runs in this process, the tools in one Docker container, and the session is stored
(under PRAISONAI_HOME) so it can be streamed, listed and resumed — later, from any process.
PraisonAI's examples/python/managed-agents/provider/local_basic.py, with compute= named.

Needs: Docker with the sandbox image (see README; or compute="local"), and a model:
OPENAI_API_KEY (OPENAI_BASE_URL for any OpenAI-compatible endpoint).
Run:   python3 examples/managed_local_loop.py
"""

from praisonai import Agent, LocalManagedConfig, ManagedAgent
from praisonai.managed.sessions import delete_session

managed = ManagedAgent(
    compute="docker",
    config=LocalManagedConfig(
        model="gpt-4o-mini",
        system="You are a helpful coding assistant. Be concise.",
        name="LocalLoopAgent",
        max_turns=10,
        budget_tokens=100_000,
    ),
)
agent = Agent(name="local-loop", backend=managed)

# 1. A turn: the loop here, write_file in the container
print("[1] Agent:", agent.start("Write fib.py that prints fib(20)."))
print(f"    Session: {managed.session_id}")

# 2. The same session, as typed events (the Claude Managed Agents vocabulary)
print("[2] Events:")
for event in managed.stream("Now run it."):
    if event.type == "agent.tool_use":
        print(f"    tool: {event.data['name']} {event.data['input']}")
    elif event.type == "agent.tool_result":
        print(f"    result: exit {event.data['exit_code']}, {event.data['duration_s']:.2f}s")
print(f"    Stop reason: {managed.last_result.stop_reason if managed.last_result else None}")

# 3. Usage, and the stored sessions
print(f"[3] Usage: in={managed.total_input_tokens}, out={managed.total_output_tokens}")
for s in managed.list_sessions():
    print(f"    {s.id} | {s.status} | {s.turns} turns")

# 4. Resume: a new object (another process would do the same) continues the session
session_id = managed.session_id
managed.close()
again = ManagedAgent.resume(session_id)
print("[4] Resumed:", again.run("Read fib.py and tell me what it prints.").text)
again.close()

# 5. Delete the session: its instance, its rows, its transcript
report = delete_session(session_id)
print("[5] Deleted:", ", ".join(f"{step.name} {'ok' if step.ok else 'FAILED'}" for step in report.steps))

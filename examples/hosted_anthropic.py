"""The hosted loop — the whole agent runs on Claude Managed Agents (Anthropic's infrastructure).

The agent, its environment and each session are made on Anthropic's API the first time and
reused; the session is also stored here (under PRAISONAI_HOME), so `praisonai managed sessions`
lists, shows and resumes it. PraisonAI's
examples/python/managed-agents/provider/runtime_hosted_anthropic.py, in the same shape.

Needs: pip install 'praisonai[llm]' and ANTHROPIC_API_KEY (or CLAUDE_API_KEY; ANTHROPIC_BASE_URL
for another endpoint), with the Managed Agents beta enabled on the key.
Run:   python3 examples/hosted_anthropic.py
"""

from praisonai import Agent, ManagedAgent, ManagedConfig
from praisonai.managed.sessions import delete_session

hosted = ManagedAgent(
    provider="anthropic",
    config=ManagedConfig(
        model="claude-haiku-4-5",
        system="You are a helpful coding assistant. Be concise.",
        name="AnthropicHostedAgent",
        tools=[{"type": "agent_toolset_20260401"}],
    ),
)
agent = Agent(name="anthropic-hosted", backend=hosted)

# 1. A turn: the loop and the tools run at Anthropic
print("[1] Agent:", agent.start("Write fib.py, run it and print fib(20)."))

# 2. What was made there (the API's ids), and this session
record = hosted.retrieve_session()
remote = record.remote or {}
print(f"[2] Session: {hosted.session_id} (remote {record.remote_session_id})")
print(f"    Agent:   {remote['agent']['id']} v{remote['agent']['version']}")
print(f"    Env ID:  {remote['environment_id']}")

# 3. Usage and stop reason
print(f"[3] Stop reason: {record.stop_reason['type']}")
print(f"    Usage: in={hosted.total_input_tokens}, out={hosted.total_output_tokens}")

# 4. Sessions stored here (`praisonai managed sessions list` shows the same)
print("[4] Sessions:")
for s in hosted.list_sessions()[:3]:
    print(f"    {s.id} | {s.status} | remote {s.remote_session_id}")

# 5. Done: delete the remote session and the stored one (the agent and environment stay, reused)
session_id = hosted.session_id
hosted.close()
report = delete_session(session_id)
print("[5] Deleted:", ", ".join(f"{step.name} {'ok' if step.ok else 'FAILED'}" for step in report.steps))

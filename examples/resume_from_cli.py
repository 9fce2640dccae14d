"""Resume from the CLI — a session started in Python, continued with `praisonai managed sessions
resume <id> "<prompt>"` from any terminal that shares PRAISONAI_HOME, later.

The session (its transcript, usage and the reference to its instance) is stored under
PRAISONAI_HOME; its container stays until its idle policy stops it, so the resumed turn finds the
file the first one wrote (or gets a new instance, and the model is told what was lost).
PraisonAI's examples/python/managed-agents/15_resume_session.py, resumed from the CLI.

Needs: Docker with the sandbox image (see README; or compute="local"), and a model:
OPENAI_API_KEY (OPENAI_BASE_URL for any OpenAI-compatible endpoint).
Run:   python3 examples/resume_from_cli.py   (it runs the two CLI lines it prints, too)
"""

import shlex
import subprocess
import sys

from praisonai import Agent, LocalManagedConfig, ManagedAgent

managed = ManagedAgent(
    compute="docker",
    config=LocalManagedConfig(
        model="gpt-4o-mini",
        system="You are a helpful coding assistant. Be concise.",
        name="PersistentCoder",
    ),
)
agent = Agent(name="coder", backend=managed)

# 1. A first turn here; the session outlives this object
print("[1] Agent:", agent.start("Write notes.txt with my favourite number: 42."))
session_id = managed.session_id
managed.close()


def praisonai(*args: str) -> None:
    """Run a `praisonai` command line as you would type it (with this interpreter's praisonai)."""
    print(f"$ praisonai {shlex.join(args)}", flush=True)
    subprocess.run([sys.executable, "-m", "praisonai", *args], check=True)


# 2. The next turn from the CLI: same session, same instance, the model's history rebuilt
print("[2] Resume it from any terminal:")
praisonai("managed", "sessions", "resume", session_id, "Read notes.txt: what is my favourite number?")

# 3. Done with it: remove its instance, its rows and its transcript
print("[3] Delete it:")
praisonai("managed", "sessions", "delete", session_id, "--yes")

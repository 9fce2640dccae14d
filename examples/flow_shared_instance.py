"""A flow: two researchers in parallel, then an editor — all their tools in ONE instance.

Needs a real model: set OPENAI_API_KEY (or use model="anthropic/claude-3-5-haiku-latest" with
ANTHROPIC_API_KEY). Uses Docker when compute="docker" (see README), or compute="local".
Run:  python3 examples/flow_shared_instance.py
"""

from praisonai import Agent, AgentFlow, parallel, when

linux = Agent("linux", "Collect facts about this instance (uname, /etc/os-release) into facts/os.txt.")
python = Agent("python", "Collect the Python version and installed packages into facts/python.txt.")
editor = Agent("editor", "Read every file under facts/ and write a short report.md from them.")
fixer = Agent("fixer", "If report.md is missing or empty, write it from the files under facts/.")

flow = AgentFlow(
    [
        parallel([linux, python]),  # both write into the same shared instance
        editor,
        when(lambda text: "report" not in text.lower(), then=fixer),
    ],
    compute="docker",
)
print(flow.start("Describe the machine you run on."))

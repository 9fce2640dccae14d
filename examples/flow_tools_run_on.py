"""A flow whose steps share ONE sandbox — PraisonAI's README example, as written there.

`tools_run_on=` moves only the shell and file tools: the thinking stays on this machine, and a file
written by step 1 is there for step 2. Any provider name works: docker, e2b, modal, daytona, flyio,
tenki, kubernetes, ssh, local.

Needs: Docker with the sandbox image (see README), and a model: OPENAI_API_KEY
       (OPENAI_BASE_URL for any OpenAI-compatible endpoint).
Run:   python3 examples/flow_tools_run_on.py
"""

from praisonai import Agent, AgentFlow

writer = Agent(name="Writer", instructions="You write files.")
reader = Agent(name="Reader", instructions="You read files.")

flow = AgentFlow(tools_run_on="docker", steps=[writer, reader])  # or e2b | modal | daytona | flyio
print(flow.start("Write 'hello' to /workspace/note.txt, then read it back"))

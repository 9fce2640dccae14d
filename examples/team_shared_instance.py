"""A team of two agents whose shell and file tools run in ONE Docker container.

Needs a real model: set OPENAI_API_KEY (or pass base_url= for any OpenAI-compatible endpoint,
e.g. Ollama: model="ollama/llama3.1"). Needs Docker with the sandbox image (see README), or use
compute="local". Run:  python3 examples/team_shared_instance.py
"""

from praisonai import Agent, AgentTeam

writer = Agent(
    "writer",
    "You write small, correct Python scripts. Save them with write_file and run them with "
    "execute_command to check they work.",
    model="gpt-4o-mini",
)
reviewer = Agent(
    "reviewer",
    "You review the script the writer saved: read it with read_file, run it, and report bugs.",
    model="gpt-4o-mini",
)

team = AgentTeam([writer, reviewer], process="sequential", compute="docker")
result = team.start("Write primes.py that prints the first 20 prime numbers, then review it.")
print(result)  # the container is already gone: the team created it and removed it

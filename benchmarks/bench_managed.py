"""Benchmark ManagedAgent's loop: overhead per turn over the raw SDK call, resume time in a new
process, and the session store's append rate.

* turn: ``ManagedAgent.run(prompt)`` (no tool call; the session grows turn by turn) against the raw
  ``openai`` client streaming the same conversation from the same scripted model on 127.0.0.1.
  The difference of the medians is our loop's overhead per turn (store writes, events, history).
* resume: a session of ``--events`` events (turns with one tool call each) on ``--compute``, then
  ``ManagedAgent.resume(id)`` in a fresh process: the time inside it (lease, transcript, history,
  reattaching the instance) and the whole process's wall time (interpreter start and imports too).
* interrupt: from ``interrupt()`` to the end of a turn whose command (a shell with two sleeps) runs
  on ``--compute``: the model stream closed, the process tree killed, the interruption recorded.
* store: single-event appends per second to a SqliteSessionStore (one transaction each), and
  10-event batches.

No peer is measured: PraisonAI's LocalManagedAgent lives in its wrapper package, which cannot be
installed beside this one (same import name). The model is scripted (no network); the numbers are
this machine's. Results JSON: benchmarks/results/bench_managed.json.

    python3 benchmarks/bench_managed.py [--turns 40] [--events 200] [--compute docker] [--appends 2000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import anyio.from_thread
import openai
from _common import RESULTS_DIR, save, summary

from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool
from praisonai.managed import ManagedAgent
from praisonai.managed.events import Event, text_content
from praisonai.managed.sessions import delete_session
from praisonai.managed.store import SqliteSessionStore

TARGETS = {"turn_overhead_ms": 5.0, "resume_ms": 300.0}
RESUME = """
import sys, time
from praisonai.managed import ManagedAgent
start = time.perf_counter()
agent = ManagedAgent.resume(sys.argv[1], api_key=sys.argv[2], base_url=sys.argv[3])
print((time.perf_counter() - start) * 1000)
agent.close()
"""


def bench_turns(llm: ScriptedLLM, n: int) -> dict[str, Any]:
    """Ours and raw take turns, on conversations of the same length. Raw is the async client our
    loop uses (``openai.AsyncOpenAI``, streamed), called from this thread through a blocking portal
    as ``run()`` reaches ours, so the difference is the loop's own work."""
    llm.set_script(lambda path, body: reply("ok, done."))
    agent = ManagedAgent(compute="local", config={"model": "gpt-4o-mini", "environment": False},
                         api_key=API_KEY, base_url=f"{llm.url}/v1")  # fmt: skip
    client = openai.AsyncOpenAI(api_key=API_KEY, base_url=f"{llm.url}/v1")
    history: list[dict[str, str]] = [{"role": "system", "content": agent.config.system}]

    async def raw_turn() -> str:
        stream = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=history,
            stream=True,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    ours, raw = [], []
    with anyio.from_thread.start_blocking_portal() as portal:
        for i in range(n + 3):
            start = time.perf_counter()
            agent.run(f"turn {i}")
            ours_ms = (time.perf_counter() - start) * 1000
            history.append({"role": "user", "content": f"turn {i}"})
            start = time.perf_counter()
            text = portal.call(raw_turn)
            raw_ms = (time.perf_counter() - start) * 1000
            history.append({"role": "assistant", "content": text})
            if i >= 3:  # warm-up turns are not counted
                ours.append(ours_ms)
                raw.append(raw_ms)
        portal.call(client.close)
    session_id = agent.session_id
    agent.close()
    if session_id:
        delete_session(session_id)
    overhead = statistics.median(ours) - statistics.median(raw)
    return {"ours": summary(ours), "raw": summary(raw), "turn_overhead_ms": overhead,
            "ratio": statistics.median(ours) / statistics.median(raw)}  # fmt: skip


def bench_resume(llm: ScriptedLLM, events: int, compute: str, reps: int) -> dict[str, Any]:
    llm.set_script(_tool_then_answer)
    agent = ManagedAgent(compute=compute, config={"model": "gpt-4o-mini", "environment": False},
                         api_key=API_KEY, base_url=f"{llm.url}/v1")  # fmt: skip
    while not agent.session_id or len(agent.store.events(agent.session_id)) < events:
        agent.run("list the workspace")
    session_id = agent.session_id
    count = len(agent.store.events(session_id))
    agent.close()
    inside, wall = [], []
    try:
        for _ in range(reps):
            start = time.perf_counter()
            child = subprocess.run([sys.executable, "-c", RESUME, session_id, API_KEY, f"{llm.url}/v1"],
                                   capture_output=True, text=True, check=True)  # fmt: skip
            wall.append((time.perf_counter() - start) * 1000)
            inside.append(float(child.stdout.strip().splitlines()[-1]))
    finally:
        delete_session(session_id)
    return {"events": count, "compute": compute, "inside": summary(inside), "process": summary(wall),
            "resume_ms": statistics.median(inside)}  # fmt: skip


def bench_interrupt(llm: ScriptedLLM, compute: str, reps: int) -> dict[str, Any]:
    """From ``interrupt()`` to the end of the turn (recorded, command killed), a command running."""
    llm.set_script(lambda path, body: reply(tool("execute_command", command="sh -c 'sleep 300 & sleep 300'")))
    agent = ManagedAgent(compute=compute, config={"model": "gpt-4o-mini", "environment": False},
                         api_key=API_KEY, base_url=f"{llm.url}/v1")  # fmt: skip
    took = []
    for _ in range(reps):
        stopped_at = 0.0
        for event in agent.stream("sleep"):
            if event.type == "agent.tool_use":
                threading.Timer(0.5, agent.interrupt).start()  # the command is running by then
                stopped_at = time.perf_counter() + 0.5
        took.append((time.perf_counter() - stopped_at) * 1000)
    session_id = agent.session_id
    agent.close()
    if session_id:
        delete_session(session_id)
    return {"compute": compute, "interrupt": summary(took), "interrupt_ms": statistics.median(took)}


def _tool_then_answer(path: str, body: dict[str, Any]) -> Any:
    last = body["messages"][-1]
    return reply("listed") if last["role"] == "tool" else reply(tool("list_files"))


def bench_store(appends: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        store = SqliteSessionStore(Path(folder) / "store.db")
        agent = store.upsert_agent("local", "bench", {"model": "x"})
        _, lease = store.create_session(agent, "bench@here:1")
        event = Event("agent.message", {"content": text_content("x" * 200)})
        start = time.perf_counter()
        for _ in range(appends):
            store.append(lease, [Event(event.type, event.data)], turn=1)
        single = appends / (time.perf_counter() - start)
        start = time.perf_counter()
        for _ in range(appends // 10):
            store.append(lease, [Event(event.type, event.data) for _ in range(10)], turn=1)
        batched = (appends // 10) * 10 / (time.perf_counter() - start)
        store.close()
    return {"single_events_per_s": single, "batched_events_per_s": batched}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--compute", default="docker")
    parser.add_argument("--resumes", type=int, default=5)
    parser.add_argument("--appends", type=int, default=2000)
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "bench_managed.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["PRAISONAI_HOME"] = home
        with ScriptedLLM() as llm:
            turns = bench_turns(llm, args.turns)
            resume = bench_resume(llm, args.events, args.compute, args.resumes)
            interrupt = bench_interrupt(llm, args.compute, args.resumes)
        store = bench_store(args.appends)
    print(
        f"turn: ours {turns['ours']['p50']:.2f} ms, raw SDK {turns['raw']['p50']:.2f} ms (median), "
        f"overhead {turns['turn_overhead_ms']:.2f} ms, {turns['ratio']:.2f}x raw "
        f"[{'PASS' if turns['turn_overhead_ms'] <= TARGETS['turn_overhead_ms'] else 'MISS'} ≤ 5 ms]"
    )
    print(
        f"resume ({resume['events']} events, {resume['compute']}): {resume['resume_ms']:.1f} ms inside "
        f"the new process, {resume['process']['p50']:.0f} ms including its start "
        f"[{'PASS' if resume['resume_ms'] <= TARGETS['resume_ms'] else 'MISS'} ≤ 300 ms]"
    )
    print(
        f"interrupt ({interrupt['compute']}): {interrupt['interrupt_ms']:.0f} ms "
        "from interrupt() to the turn's end"
    )
    print(f"store: {store['single_events_per_s']:.0f} single appends/s, "
          f"{store['batched_events_per_s']:.0f} events/s in batches of 10")  # fmt: skip
    save(
        args.json,
        vars(args) | {"json": str(args.json)},
        {"turn": turns, "resume": resume, "interrupt": interrupt, "store": store},
    )


if __name__ == "__main__":
    main()

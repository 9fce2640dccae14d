"""Make the dashboard's screenshots in this folder, from real docker instances and a real session
(its model scripted on loopback), in Debian's chromium: ``python3 docs/images/screenshots.py``.

Everything runs in a throwaway PRAISONAI_HOME and is removed at the end.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["PRAISONAI_HOME"] = tempfile.mkdtemp(prefix="praisonai-screenshots-")

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from praisonai import LocalManagedConfig, ManagedAgent, Sandbox  # noqa: E402
from praisonai.dashboard import Dashboard  # noqa: E402
from praisonai.llm.testing import API_KEY, ScriptedLLM, reply, tool  # noqa: E402
from praisonai.managed.sessions import delete_session  # noqa: E402

SCRIPT = [
    reply("I'll look at the repository first.", tool("execute_command", command="ls -la /workspace")),
    reply(
        tool(
            "write_file",
            path="fib.py",
            content="def fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\n",
        )
    ),
    reply(
        tool(
            "execute_command", command="python3 -c 'from fib import fib; print([fib(i) for i in range(12)])'"
        )
    ),
    reply("fib.py is written; the first twelve values are 0 to 89.", input_tokens=420, output_tokens=38),
]


def main() -> None:
    with ScriptedLLM(SCRIPT) as llm, sync_playwright() as playwright:
        os.environ.update(OPENAI_BASE_URL=f"{llm.url}/v1", OPENAI_API_KEY=API_KEY)
        agent = ManagedAgent(compute="docker", config=LocalManagedConfig(model="gpt-4o-mini"))
        sandboxes = [Sandbox.create("docker", env={"CI": "1"}), Sandbox.create("docker", env={"CI": "1"})]
        try:
            agent.run("Write fib.py and show its first twelve values")
            session_id = agent.session_id
            assert session_id is not None
            agent.close()
            args = ["--no-sandbox"] if os.geteuid() == 0 else []
            browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=args)
            with Dashboard() as board:
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(board.url)
                expect(page.locator("#instances tbody tr")).to_have_count(3)
                page.screenshot(path=HERE / "dashboard-instances.png")
                page.goto(f"http://127.0.0.1:{board.port}/#/sessions/{session_id}")
                expect(page.locator("#timeline")).to_contain_text("turn ended: end_turn")
                page.screenshot(path=HERE / "dashboard-session.png")
                page.goto(f"http://127.0.0.1:{board.port}/#/instances/{sandboxes[0].id}/terminal")
                expect(page.locator("#terminal-status")).to_have_text("connected")
                page.locator("#terminal .xterm").click()
                page.keyboard.type("uname -srm; python3 --version; ls /\n")
                expect(page.locator("#terminal .xterm-rows")).to_contain_text("Python 3")
                page.screenshot(path=HERE / "dashboard-terminal.png")
            browser.close()
        finally:
            for sandbox in sandboxes:
                sandbox.close()
            agent.close()
            if agent.session_id:
                delete_session(agent.session_id)


if __name__ == "__main__":
    main()

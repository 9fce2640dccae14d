"""A git repository served over git's dumb HTTP protocol on 127.0.0.1 behind Basic auth, for
the clone tests: a real ``git clone`` must send the token to get anything."""

from __future__ import annotations

import base64
import functools
import subprocess
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


def make_bare(root: Path) -> Path:
    """``root/repo.git``: main (README, app.py) with a tag v1 at its first commit, and a
    branch ``feature`` adding feature.txt; ready for dumb HTTP (``update-server-info``)."""
    work = root / "work"
    subprocess.run([*GIT, "init", "-q", str(work)], check=True)

    def commit(name: str, text: str, message: str) -> None:
        (work / name).write_text(text)
        subprocess.run([*GIT, "-C", str(work), "add", name], check=True)
        subprocess.run([*GIT, "-C", str(work), "commit", "-qm", message], check=True)

    commit("README", "v1\n", "first")
    subprocess.run([*GIT, "-C", str(work), "tag", "v1"], check=True)
    commit("app.py", "print(1)\n", "second")
    subprocess.run([*GIT, "-C", str(work), "checkout", "-qb", "feature"], check=True)
    commit("feature.txt", "feature\n", "third")
    subprocess.run([*GIT, "-C", str(work), "checkout", "-q", "main"], check=True)
    bare = root / "repo.git"
    subprocess.run([*GIT, "clone", "-q", "--bare", str(work), str(bare)], check=True)
    subprocess.run([*GIT, "-C", str(bare), "update-server-info"], check=True)
    return bare


class GitHTTP:
    """Serves ``root`` (holding ``repo.git``); only ``x-access-token:TOKEN`` gets in. Each
    request waits ``delay`` seconds first, so a clone lasts long enough to be watched."""

    def __init__(self, root: Path, token: str, delay: float = 0.0, host: str = "127.0.0.1") -> None:
        self.authorized = 0
        expected = "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                time.sleep(delay)
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                server.authorized += 1
                super().do_GET()

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer((host, 0), functools.partial(Handler, directory=str(root)))
        self.url = f"http://{host}:{self._httpd.server_address[1]}/repo.git"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="githttp", daemon=True)

    def __enter__(self) -> GitHTTP:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)

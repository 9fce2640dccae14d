"""Runs INSIDE a docker instance, as root (bench_helper.py copies it in): starts each helper script
given as root with its commands as 1000:1000, as a docker channel does, and times its requests one
at a time from in there (no engine, no host client), rep by rep across the scripts, so the machine's
load falls on each alike. Prints one JSON object: {op: [median ms per script]}.

    python3 _helper_driver.py REPS SCRIPT...
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

DATA = os.urandom(1024)
USER = "1000:1000"


class Helper:
    """One helper process and its two streams: replies on stdout, job ends on stderr."""

    def __init__(self, script: str, spool: str) -> None:
        self.spool = spool
        argv = ["sh", "-c", script, "praisonai-helper", spool, "-", "attached", USER]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        nonce = new_nonce()
        self._send(f": {nonce}\n".encode())
        self._until(self.proc.stdout, f"{nonce} ".encode())

    def _send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    @staticmethod
    def _until(stream: object, marker: bytes) -> bytes:
        buffer, fd = b"", stream.fileno()  # type: ignore[attr-defined]
        while marker not in buffer or not buffer.endswith(b"\n"):
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise SystemExit(f"the helper ended: {buffer[-300:]!r}")
            buffer += chunk
        return buffer

    def request(self, function: str, *args: str, payload: bytes = b"") -> bytes:
        nonce = new_nonce()
        self._send(" ".join([function, nonce, *map(shlex.quote, args)]).encode() + b"\n" + payload)
        reply = self._until(self.proc.stdout, f"{nonce} ".encode())
        assert reply.endswith(f"{nonce} 0\n".encode()), reply[-200:]
        return reply

    def run(self, command: str, verb: str = "__p_exec") -> None:
        job, secret = secrets.token_hex(16), secrets.token_hex(16)
        self.request(verb, job, "/workspace", "", secret, command)
        end = self._until(self.proc.stderr, f"D {job} ".encode())
        assert f"D {job} 0 ".encode() in end, end[-200:]


def new_nonce() -> str:
    return "@pz" + secrets.token_hex(16)


def operations() -> dict[str, Callable[[Helper], object]]:
    partial = lambda: ".praisonai-write-" + secrets.token_hex(12)  # noqa: E731
    return {
        "exec true (command uid)": lambda h: h.run("true"),
        "exec true (helper's uid: no separation)": lambda h: h.run("true", "__p_rexec"),
        "exec ls / (command uid)": lambda h: h.run("ls /"),
        "exec cd / && ls (command uid)": lambda h: h.run("cd / && ls"),
        "write_file 1 KiB (command uid)": lambda h: h.request(
            "__p_fwrite", "/workspace/f.bin", str(len(DATA)), partial(), payload=DATA
        ),
        "read_file 1 KiB (command uid)": lambda h: h.request("__p_fread", "/workspace/f.bin", "0"),
        "read of a spooled stream (helper's uid)": lambda h: h.request(
            "__p_read", f"{h.spool}/helper.pid", "0", "65537"
        ),
    }


def main() -> None:
    reps, scripts = int(sys.argv[1]), sys.argv[2:]
    helpers = [Helper(Path(path).read_text(), f"/tmp/.bench-spool-{n}") for n, path in enumerate(scripts)]
    ops = operations()
    for helper in helpers:  # the file the reads read; untimed
        ops["write_file 1 KiB (command uid)"](helper)
    times: dict[str, list[list[float]]] = {op: [[] for _ in helpers] for op in ops}
    for rep in range(reps + 3):
        for op, call in ops.items():
            order = list(range(len(helpers)))
            for n in order if rep % 2 == 0 else order[::-1]:
                start = time.perf_counter()
                call(helpers[n])
                if rep >= 3:  # warm-up
                    times[op][n].append((time.perf_counter() - start) * 1000)
    print(json.dumps({op: [statistics.median(xs) for xs in per] for op, per in times.items()}))


if __name__ == "__main__":
    main()

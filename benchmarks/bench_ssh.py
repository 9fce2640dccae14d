"""Benchmark the SSH provider against raw paramiko and raw asyncssh on one real sshd, in one run.

Sides (p50/p95 in ms; every side talks to the same throwaway OpenSSH sshd on 127.0.0.1, the one
the tests use, with an ed25519 key and strict host-key checking):

* ours: ``SSHCompute`` through its public async API (connect+auth times ``_ssh_connect.connect``,
  the function every pooled connection goes through).
* paramiko: ``SSHClient.connect`` on a socket with TCP_NODELAY (without it paramiko pays ~40 ms
  per round trip here), ``exec_command`` + read + exit status, and one reused ``SFTPClient``.
  The floor our targets are measured against.
* asyncssh: ``asyncssh.connect``, ``conn.run``, one reused SFTP client (when installed).
* peer: ``praisonai-sandbox``'s ``SSHSandbox`` (when installed; said so otherwise): ``start()`` +
  ``stop()`` (it connects, then runs ``mkdir -p``), ``run_command``, ``write_file`` (an exec of
  ``mkdir -p`` and a new SFTP session per call), ``read_file`` (a new SFTP session per call).

Targets: connect+auth <= 30 ms; exec ``true`` on an open connection <= 3 ms; write 1 KiB <= 3 ms;
SFTP 10 MiB within 1.2x raw paramiko. The sides take turns rep by rep. ``--no-reexec`` starts
sshd with ``-r`` (no re-exec of sshd per connection, about 15 ms of each connect here). Results
JSON: benchmarks/results/bench_ssh.json.

    python3 benchmarks/bench_ssh.py [--n 100] [--n-big 20]
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import paramiko

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, save, summary, timed

from praisonai.compute.providers.ssh import SSHCompute
from praisonai.compute.providers.ssh._connect import SSHHost, connect
from praisonai.compute.testing.sshd import SSHServer

HAVE_ASYNCSSH = importlib.util.find_spec("asyncssh") is not None
HAVE_PEER = importlib.util.find_spec("praisonai_sandbox") is not None
DATA = {"1k": os.urandom(1024), "10m": os.urandom(10 * 1024 * 1024)}
# op: (label, target kind, limit, target text). "p50": ours median <= limit ms; "ratio":
# ours / paramiko median <= limit; None: informational.
OPS: dict[str, tuple[str, str | None, float, str]] = {
    "connect": ("connect + auth", "p50", 30.0, "ours <= 30 ms"),
    "exec": ("exec `true`, open connection", "p50", 3.0, "ours <= 3 ms"),
    "write_1k": ("write 1 KiB", "p50", 3.0, "ours <= 3 ms"),
    "read_1k": ("read 1 KiB", None, 0.0, "informational"),
    "write_10m": ("SFTP write 10 MiB", "ratio", 1.2, "ours <= 1.2x paramiko"),
    "read_10m": ("SFTP read 10 MiB", "ratio", 1.2, "ours <= 1.2x paramiko"),
    "provision": ("provision (workspace, env, record)", None, 0.0, "informational"),
    "shutdown": ("shutdown (kill sweep, rm -rf)", None, 0.0, "informational"),
}
Side = Callable[[], Awaitable[Any]]


class Raw:
    """paramiko as a careful user writes it: TCP_NODELAY, one client, one SFTP session."""

    def __init__(self, server: SSHServer, workdir: str) -> None:
        self.server, self.workdir = server, workdir
        self.client = self.connect()
        self.sftp = self.client.open_sftp()

    def connect(self) -> paramiko.SSHClient:
        s = self.server
        sock = socket.create_connection((s.host, s.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = paramiko.SSHClient()
        client.load_host_keys(s.known_hosts)
        client.connect(s.host, s.port, s.user, key_filename=s.key_file, sock=sock,
                       look_for_keys=False, allow_agent=False)  # fmt: skip
        return client

    def exec_true(self) -> int:
        _, stdout, _ = self.client.exec_command("true")
        stdout.read()
        return int(stdout.channel.recv_exit_status())

    def write(self, name: str, data: bytes) -> None:
        self.sftp.putfo(io.BytesIO(data), f"{self.workdir}/{name}", confirm=False)

    def read(self, name: str) -> bytes:
        buffer = io.BytesIO()
        self.sftp.getfo(f"{self.workdir}/{name}", buffer)
        return buffer.getvalue()


async def asyncssh_sides(server: SSHServer, workdir: str, exit_stack: list[Any]) -> dict[str, Side]:
    import asyncssh

    def options() -> dict[str, Any]:
        return {"port": server.port, "username": server.user, "client_keys": [server.key_file],
                "known_hosts": server.known_hosts}  # fmt: skip

    conn = await asyncssh.connect(server.host, **options())
    sftp = await conn.start_sftp_client()
    exit_stack.append(conn)

    async def connect_close() -> None:
        c = await asyncssh.connect(server.host, **options())
        c.close()
        await c.wait_closed()

    async def write(name: str, data: bytes) -> None:
        async with sftp.open(f"{workdir}/{name}", "wb") as f:
            await f.write(data)

    async def read(name: str) -> bytes:
        async with sftp.open(f"{workdir}/{name}", "rb") as f:
            return bytes(await f.read())

    return {
        "connect": connect_close,
        "exec": lambda: conn.run("true"),
        "write_1k": lambda: write("a1k", DATA["1k"]),
        "read_1k": lambda: read("a1k"),
        "write_10m": lambda: write("a10m", DATA["10m"]),
        "read_10m": lambda: read("a10m"),
    }


async def peer_sides(server: SSHServer, workdir: str, exit_stack: list[Any]) -> dict[str, Side]:
    """praisonai-sandbox's SSHSandbox. It reads only ~/.ssh/known_hosts, so HOME points at a
    directory holding the server's key while it connects (as shipped it cannot connect at all)."""
    from praisonai_sandbox.ssh import SSHSandbox  # type: ignore[import-not-found]

    home = Path(server.dir, "peer-home")
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "known_hosts").write_text(Path(server.known_hosts).read_text())

    def sandbox() -> Any:
        return SSHSandbox(server.host, user=server.user, port=server.port, key_file=server.key_file,
                          working_dir=workdir)  # fmt: skip

    async def started(box: Any) -> Any:
        real, os.environ["HOME"] = os.environ.get("HOME", ""), str(home)
        try:
            await box.start()
        finally:
            os.environ["HOME"] = real
        return box

    box = await started(sandbox())
    exit_stack.append(box._connection)

    async def connect_stop() -> None:
        await (await started(sandbox())).stop()

    async def write(name: str, data: bytes) -> None:
        assert await box.write_file(f"{workdir}/{name}", data), "the peer could not write"

    async def run_true() -> None:
        assert (await box.run_command("true")).exit_code == 0

    return {
        "connect": connect_stop,
        "exec": run_true,
        "write_1k": lambda: write("p1k", DATA["1k"]),
        "read_1k": lambda: box.read_file(f"{workdir}/p1k"),
        "write_10m": lambda: write("p10m", DATA["10m"]),
        "read_10m": lambda: box.read_file(f"{workdir}/p10m"),
    }


async def bench(args: argparse.Namespace, server: SSHServer) -> dict[str, dict[str, list[float]]]:
    samples: dict[str, dict[str, list[float]]] = {}
    provider = SSHCompute(**server.connect_kwargs())
    host = SSHHost(**server.connect_kwargs())
    instance_id = (await provider.provision()).instance_id
    workdir = str(Path(server.home, ".praisonai", "instances", instance_id))
    raw, closers = Raw(server, workdir), []
    try:

        async def async_of(fn: Callable[..., Any], *a: Any) -> Any:
            return fn(*a)  # raw paramiko blocks inline: no thread hop on the floor's side

        sides: dict[str, dict[str, Side]] = {
            "ours": {
                "connect": lambda: anyio.to_thread.run_sync(lambda: connect(host).close()),
                "exec": lambda: provider.execute(instance_id, "true"),
                "write_1k": lambda: provider.write_file(instance_id, "o1k", DATA["1k"]),
                "read_1k": lambda: provider.read_file(instance_id, "o1k"),
                "write_10m": lambda: provider.write_file(instance_id, "o10m", DATA["10m"]),
                "read_10m": lambda: provider.read_file(instance_id, "o10m"),
            },
            "paramiko": {
                "connect": lambda: async_of(lambda: raw.connect().close()),
                "exec": lambda: async_of(raw.exec_true),
                "write_1k": lambda: async_of(raw.write, "r1k", DATA["1k"]),
                "read_1k": lambda: async_of(raw.read, "r1k"),
                "write_10m": lambda: async_of(raw.write, "r10m", DATA["10m"]),
                "read_10m": lambda: async_of(raw.read, "r10m"),
            },
        }
        if HAVE_ASYNCSSH:
            sides["asyncssh"] = await asyncssh_sides(server, workdir, closers)
        if HAVE_PEER:
            sides["peer"] = await peer_sides(server, workdir, closers)
        for op in ("connect", "exec", "write_1k", "read_1k", "write_10m", "read_10m"):
            n = args.n_big if op.endswith("10m") else args.n
            for rep in range(args.warmup + n):  # sides take turns, so drifting load hits all alike
                for side, calls in sides.items():
                    ms, _ = await timed(calls[op])
                    if rep >= args.warmup:
                        samples.setdefault(op, {}).setdefault(side, []).append(ms)
        assert await provider.read_file(instance_id, "o10m") == DATA["10m"], "ours read back wrong bytes"
        for _ in range(args.n_life):
            ms, info = await timed(provider.provision)
            samples.setdefault("provision", {}).setdefault("ours", []).append(ms)
            ms, _ = await timed(lambda: provider.shutdown(info.instance_id))  # noqa: B023 (awaited now)
            samples.setdefault("shutdown", {}).setdefault("ours", []).append(ms)
    finally:
        for conn in closers:
            conn.close()
        raw.client.close()
        await provider.shutdown(instance_id)
    return samples


def report(samples: dict[str, dict[str, list[float]]]) -> tuple[dict[str, Any], list[str]]:
    columns = "op | ours p50 / p95 | paramiko p50 / p95 | ours/paramiko | asyncssh p50 / p95 | peer p50 / p95"
    lines = [f"| {columns} | target |", "|---|---:|---:|---:|---:|---:|---|"]
    stats: dict[str, Any] = {}
    for op, (label, kind, limit, text) in OPS.items():
        row = {side: summary(xs) for side, xs in samples.get(op, {}).items()}
        cell = {s: f"{row[s]['p50']:.2f} / {row[s]['p95']:.2f}" if s in row else "-" for s in
                ("ours", "paramiko", "asyncssh", "peer")}  # fmt: skip
        ratio = row["ours"]["p50"] / row["paramiko"]["p50"] if "paramiko" in row else None
        value = ratio if kind == "ratio" else row["ours"]["p50"]
        ok = None if kind is None or value is None else value <= limit
        verdict = "" if ok is None else " PASS" if ok else " FAIL"
        asyncssh = cell["asyncssh"] if HAVE_ASYNCSSH else "not installed"
        peer = cell["peer"] if HAVE_PEER else "not installed"
        shown_ratio = f"{ratio:.2f}x" if ratio else ""
        cells = [label, cell["ours"], cell["paramiko"], shown_ratio, asyncssh, peer, f"{text}{verdict}"]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
        stats[op] = {**row, "ours_over_paramiko": ratio, "target": text, "pass": ok}
    return stats, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="timed reps per small op (100)")
    parser.add_argument("--n-big", type=int, default=20, help="timed reps per 10 MiB transfer (20)")
    parser.add_argument("--n-life", type=int, default=20, help="provision+shutdown pairs (20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed reps first (3)")
    parser.add_argument(
        "--no-reexec", action="store_true", help="start sshd with -r (no re-exec per connection)"
    )
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "bench_ssh.json")
    args = parser.parse_args()
    with SSHServer(sshd_args=("-r",) if args.no_reexec else ()) as server:
        samples = anyio.run(bench, args, server)
    stats, lines = report(samples)
    print(f"\nn={args.n} n_big={args.n_big} n_life={args.n_life} warmup={args.warmup}; "
          f"paramiko {paramiko.__version__}; sshd re-exec {'off' if args.no_reexec else 'on'}\n")  # fmt: skip
    print("\n".join(lines))
    meta = {"n": args.n, "n_big": args.n_big, "warmup": args.warmup, "paramiko": paramiko.__version__,
            "sshd_reexec": not args.no_reexec,
            "asyncssh_installed": HAVE_ASYNCSSH, "peer_installed": HAVE_PEER}  # fmt: skip
    save(args.json, meta, stats)


if __name__ == "__main__":
    main()

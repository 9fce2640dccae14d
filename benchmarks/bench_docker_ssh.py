"""A pool's ``ssh://`` host next to the same engine as ``unix://``: what the OpenSSH forward costs.

One engine of the pool test engines (``.ci/dockerd-pool.sh up DIR 3 busybox``; DIR from
``$PRAISONAI_TEST_DOCKERD_POOL``), reached directly and through the test sshd on 127.0.0.1
(``SSHServer``). Sides: ``unix``; ``ssh`` (the forward as the provider makes it, a pty session);
``ssh -N`` (a plain ``ssh -nNT`` forward: sshd then leaves Nagle's algorithm on). Per side:
create+start+first exec of ``true`` (``--n`` instances, one after another), then exec ``true`` on
one instance (``--execs`` times). p50/p95 in ms; JSON: benchmarks/results/bench_docker_ssh.json.

    PRAISONAI_TEST_DOCKERD_POOL=/tmp/praisonai-ci-pool python3 benchmarks/bench_docker_ssh.py
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from _common import RESULTS_DIR, save, summary, timed

from praisonai.compute.providers.docker import DockerCompute, DockerHost, _tunnel
from praisonai.compute.testing.sshd import SSHServer

IMAGE = "praisonai-pool-test:busybox"


async def side(host: DockerHost, n: int, execs: int) -> dict[str, Any]:
    pool = DockerCompute(hosts=[host], image=IMAGE)
    first: list[float] = []
    try:
        for _ in range(n):

            async def start() -> str:
                info = await pool.provision()
                await pool.execute(info.instance_id, "true")
                return info.instance_id

            ms, instance = await timed(start)
            first.append(ms)
            await pool.shutdown(instance)
        instance = (await pool.provision()).instance_id
        await pool.execute(instance, "true")
        rtt = [(await timed(lambda: pool.execute(instance, "true")))[0] for _ in range(execs)]
        await pool.shutdown(instance)
    finally:
        pool.close()
    return {"create_start_first_exec": summary(first), "exec_true": summary(rtt)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10)
    parser.add_argument("--execs", type=int, default=200)
    args = parser.parse_args()
    engines = Path(os.environ.get("PRAISONAI_TEST_DOCKERD_POOL", "/tmp/praisonai-ci-pool"))
    engine = f"{engines}/d2/docker.sock"
    results: dict[str, Any] = {}
    with SSHServer(groups=("docker",)) as server:
        config = server.dir / "ssh_config"
        config.write_text(
            f"Host {server.host}\n  IdentityFile {server.key_file}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {server.known_hosts}\n  StrictHostKeyChecking yes\n"
        )
        url = f"ssh://{server.user}@{server.host}:{server.port}"
        ssh = DockerHost(url=url, socket=engine, ssh_config=str(config))
        results["unix"] = anyio.run(side, DockerHost(url=f"unix://{engine}"), args.n, args.execs)
        results["ssh"] = anyio.run(side, ssh, args.n, args.execs)
        plain = _tunnel.Tunnel  # the same forward without the pty session (private, for this side only)
        original = plain.__init__

        def without_session(self: _tunnel.Tunnel, to: _tunnel.Target) -> None:
            original(self, to)
            self._session = False

        plain.__init__ = without_session  # type: ignore[method-assign]
        _tunnel._tunnels.clear()
        results["ssh -N"] = anyio.run(side, ssh, args.n, args.execs)
    for name, r in results.items():
        a, b = r["create_start_first_exec"], r["exec_true"]
        print(f"{name:7} create+start+first exec p50 {a['p50']:.1f} p95 {a['p95']:.1f} ms;"
              f" exec true p50 {b['p50']:.2f} p95 {b['p95']:.2f} ms")  # fmt: skip
    save(RESULTS_DIR / "bench_docker_ssh.json", {"n": args.n, "execs": args.execs}, results)


if __name__ == "__main__":
    main()

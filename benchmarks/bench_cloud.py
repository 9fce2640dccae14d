"""Vendor API calls per operation on E2B, Modal, Daytona, Fly.io and Tenki: ours, the raw SDK (raw REST
for Fly, which has no SDK) and the peer.

Each vendor's real SDK talks to its loopback wire fake (tests/fakes: fakes.e2b, fakes.modal,
fakes.daytona, fakes.flyio, fakes.tenki; sandboxes are local docker containers). The fake
counts the requests it answers, by route (E2B: HTTP method + path, ids folded; Modal: gRPC method,
control plane and command router; Daytona: HTTP method + route; Fly: HTTP method + the path's last
kind, ``machines``, ``exec``, ``wait``, ``lease``...; Tenki: gRPC method, control and data plane).
For each side the count is taken over ``--n`` repetitions of one operation after one untimed warm-up
(``--n-life`` for provision/shutdown) and divided: calls per exec ``true``, per 1 KiB write, per 1
KiB read, per provision, per shutdown. Fewer calls is lower latency on a real network; latencies
through a loopback fake are no performance claim, so none are printed.

Sides (_cloud_sides.py, _cloud_fly.py): ours =
``praisonai.compute.registry.resolve_compute(vendor)``; raw = the vendor's async SDK called directly
on a handle already held (the floor; for Fly the Machines REST API through one httpx client); peer =
``praisonai-sandbox``'s compute adapters (E2BCompute, ModalCompute, DaytonaCompute, FlyioCompute,
TenkiCompute) through their own API, when it is installed (else "not installed"); peer-sbx = its
one-sandbox classes (none for Fly or Tenki).

Side by side (_cloud_checks.py): behaviour checks on ours and the peer through the same fakes, PASS
/ FAIL / FAKE GAP, each check's exact definition in its docstring.

Live: when E2B_API_KEY / MODAL_TOKEN_ID+MODAL_TOKEN_SECRET / DAYTONA_API_KEY /
FLY_API_TOKEN+FLY_APP_NAME / TENKI_API_KEY are set, ours and raw are also timed against the vendor
itself (exec ``true`` p50/p95, provision, shutdown).

    PYTHONPATH=$PWD python3 benchmarks/bench_cloud.py [--n 10] [--n-life 3]
        [--vendors e2b,modal,daytona,flyio,tenki] [--no-peer]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).parent))
from _cloud_checks import CHECKS, run_checks
from _cloud_sides import RAW, SANDBOX_CLASSES, Fake, Ours, Peer, PeerSandbox, restore_env, set_env
from _common import RESULTS_DIR, save, summary, timed

VENDORS = ("e2b", "modal", "daytona", "flyio", "tenki")
SDK = {"flyio": "httpx"}  # the module a vendor's side needs, when not named as the vendor (Fly has no SDK)
HAVE_PEER = importlib.util.find_spec("praisonai_sandbox") is not None
OPS = ("provision", "exec", "write_1k", "read_1k", "shutdown")
DATA = os.urandom(1024)
CREDENTIALS = {
    "e2b": ("E2B_API_KEY",),
    "modal": ("MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET"),
    "daytona": ("DAYTONA_API_KEY",),
    "flyio": ("FLY_API_TOKEN", "FLY_APP_NAME"),
    "tenki": ("TENKI_API_KEY",),
}


def per_op(fake: Fake, reps: int) -> dict[str, Any]:
    """The fake's counter since its last reset, divided by ``reps``. Daytona's socket.io probes
    are listed but not counted: on the service the SDK holds one event-stream connection per
    client, while the fake answers 404 and the SDK tries again on its next operation."""
    routes = {k: v / reps for k, v in sorted(fake.counts().items())}
    return {"calls": sum(v for k, v in routes.items() if "socket.io" not in k), "routes": routes}


async def count_side(side: Any, fake: Fake, n: int, n_life: int) -> dict[str, Any]:
    """Calls per operation for one side; an operation that raises is recorded as its error."""
    out: dict[str, Any] = {}
    h = await side.provision()  # the warm-up: apps looked up, clients made
    try:
        fake.reset()
        made = [await side.provision() for _ in range(n_life)]
        out["provision"] = per_op(fake, n_life)
        fake.reset()
        for other in made:
            await side.shutdown(other)
        out["shutdown"] = per_op(fake, n_life)
        ops: dict[str, Callable[[], Awaitable[Any]]] = {
            "exec": lambda: side.run(h, "true"),
            "write_1k": lambda: side.write(h, "bench-1k.bin", DATA),
            "read_1k": lambda: side.read(h, "bench-1k.bin"),
        }
        for op, call in ops.items():
            try:
                await call()
                fake.reset()
                for _ in range(n):
                    await call()
                out[op] = per_op(fake, n)
            except Exception as exc:
                out[op] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}
        if "calls" in out["read_1k"] and await side.read(h, "bench-1k.bin") != DATA:
            out["read_1k"]["wrong_bytes"] = True  # counted all the same; the table says so
    finally:
        await side.shutdown(h)
    return out


async def run_vendor(vendor: str, n: int, n_life: int) -> dict[str, Any]:
    """Counts and checks for one vendor, its fake started and stopped here."""
    fake = Fake(vendor)
    saved = set_env(fake.env)
    result: dict[str, Any] = {"counts": {}, "checks": {}, "errors": {}}
    try:
        sides: list[Any] = [Ours(vendor), RAW[vendor]()]
        if HAVE_PEER:
            sides += [Peer(vendor)] + ([PeerSandbox(vendor)] if vendor in SANDBOX_CLASSES else [])
        for side in sides:
            try:
                result["counts"][side.side] = await count_side(side, fake, n, n_life)
            except Exception as exc:
                result["errors"][side.side] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            if side.side != "raw":
                result["checks"][side.side] = await run_checks(side)
            if hasattr(side, "close"):
                await side.close()
    finally:
        restore_env(saved)
        fake.close()
    return result


async def live_vendor(vendor: str, n: int, n_life: int) -> dict[str, Any]:
    """Real latencies (ms) against the vendor itself: ours vs raw, taking turns."""
    sides: list[Any] = [Ours(vendor, image="python:3.12-slim"), RAW[vendor](image="python:3.12-slim")]
    samples: dict[str, dict[str, list[float]]] = {s.side: {} for s in sides}
    held = {s.side: await s.provision() for s in sides}
    try:
        for rep in range(n_life + 1):
            for side in sides if rep % 2 == 0 else sides[::-1]:
                ms, h = await timed(side.provision)
                ms_down, _ = await timed(lambda: side.shutdown(h))  # noqa: B023 (awaited now)
                if rep:
                    samples[side.side].setdefault("provision", []).append(ms)
                    samples[side.side].setdefault("shutdown", []).append(ms_down)
        for rep in range(n + 2):
            for side in sides if rep % 2 == 0 else sides[::-1]:
                ms, _ = await timed(lambda: side.run(held[side.side], "true"))  # noqa: B023
                if rep >= 2:
                    samples[side.side].setdefault("exec", []).append(ms)
    finally:
        for side in sides:
            await side.shutdown(held[side.side])
            if hasattr(side, "close"):
                await side.close()
    return {side: {op: summary(xs) for op, xs in ops.items()} for side, ops in samples.items()}


def cell(counts: dict[str, Any], side: str, op: str, errors: dict[str, str]) -> str:
    if side.startswith("peer") and not HAVE_PEER:
        return "not installed"
    if side == "peer-sbx" and side not in counts:
        return "none"  # the peer has no one-sandbox class for this vendor
    got = counts.get(side, {}).get(op)
    if got is None:
        return "error" if side in errors else "-"
    if "error" in got:
        return "error"
    return f"{got['calls']:g}" + (" (wrong bytes)" if got.get("wrong_bytes") else "")


def ratio(counts: dict[str, Any], side: str, op: str) -> str:
    a, b = counts.get(side, {}).get(op, {}), counts.get("raw", {}).get(op, {})
    if "calls" not in a or not b.get("calls"):
        return ""
    return f"{a['calls'] / b['calls']:.2f}x"


def report(results: dict[str, Any]) -> None:
    print("\nvendor API calls per operation, through the wire fakes (counts, and ratio to the raw SDK;")
    print("Daytona's socket.io probes not counted, see per_op)\n")
    print("| vendor | op | ours | raw (floor) | ours/raw | peer | peer/raw | peer-sbx | peer-sbx/raw |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for vendor, r in results.items():
        if "skipped" in r:
            print(f"| {vendor} | all | skipped: {r['skipped']} | | | | | | |")
            continue
        c, e = r["counts"], r["errors"]
        for op in OPS:
            cells = [cell(c, "ours", op, e), cell(c, "raw", op, e), ratio(c, "ours", op)]
            for peer in ("peer", "peer-sbx"):
                cells += [cell(c, peer, op, e), ratio(c, peer, op)]
            print(f"| {vendor} | {op} | " + " | ".join(cells) + " |")
    print("\nroutes per operation (calls each)")
    for vendor, r in results.items():
        for side, ops in r.get("counts", {}).items():
            for op, got in ops.items():
                text = got.get("error") or ", ".join(f"{k} x{v:.3g}" for k, v in got["routes"].items())
                text += " (read back bytes that differ from those written)" if got.get("wrong_bytes") else ""
                print(f"  {vendor:<7} {side:<8} {op:<9} {text}")
        for side, err in r.get("errors", {}).items():
            print(f"  {vendor:<7} {side:<8} failed: {err}")
    print_checks(results)


def print_checks(results: dict[str, Any]) -> None:
    sides = ("ours", "peer", "peer-sbx")
    columns = [(v, s) for v, r in results.items() for s in sides if "checks" in r]
    print("\nside by side: behaviour checks through the same fakes\n")
    print("| check | " + " | ".join(f"{v} {s}" for v, s in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name in CHECKS:
        row = []
        for vendor, side in columns:
            got = results[vendor]["checks"].get(side, {}).get(name)
            row.append(got["result"] if got else ("not installed" if side != "ours" else "-"))
        print(f"| {name} | " + " | ".join(row) + " |")
    print("\nwhat each check saw")
    for vendor, side in columns:
        for name, got in results[vendor]["checks"].get(side, {}).items():
            print(f"  {vendor:<7} {side:<8} {name:<30} {got['result']:<8} {got['detail']}")


def report_live(live: dict[str, Any]) -> None:
    print("\nreal latencies against the vendors (ms, p50 / p95)")
    for vendor, r in live.items():
        if "skipped" in r:
            print(f"  {vendor:<7} skipped: {r['skipped']}")
            continue
        for op in ("exec", "provision", "shutdown"):
            o, w = r["ours"][op], r["raw"][op]
            print(f"  {vendor:<7} {op:<9} ours {o['p50']:.1f} / {o['p95']:.1f}   raw {w['p50']:.1f} / "
                  f"{w['p95']:.1f}   ours/raw {o['p50'] / w['p50']:.2f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="repetitions per exec/write/read (10)")
    parser.add_argument("--n-life", type=int, default=3, help="provisions and shutdowns (3)")
    parser.add_argument("--vendors", default=",".join(VENDORS))
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "bench_cloud.json")
    parser.add_argument("--no-peer", action="store_true", help="leave the peer out, as if not installed")
    args = parser.parse_args()
    global HAVE_PEER
    HAVE_PEER = HAVE_PEER and not args.no_peer
    vendors = [v.strip() for v in args.vendors.split(",") if v.strip()]
    live: dict[str, Any] = {}
    for vendor in vendors:  # live first: the fakes' variables are set only while each runs
        missing = [k for k in CREDENTIALS[vendor] if not os.environ.get(k)]
        if importlib.util.find_spec(SDK.get(vendor, vendor)) is None:
            live[vendor] = {"skipped": f"the {vendor} SDK is not installed"}
        elif missing:
            live[vendor] = {"skipped": f"{' and '.join(missing)} not set (no real account to measure)"}
        else:
            try:
                live[vendor] = anyio.run(live_vendor, vendor, args.n, args.n_life)
            except Exception as exc:  # a refused key, a quota: said, and the fakes still run
                live[vendor] = {"skipped": f"failed: {type(exc).__name__}: {exc}".splitlines()[0][:300]}
    results: dict[str, Any] = {}
    for vendor in vendors:
        if importlib.util.find_spec(SDK.get(vendor, vendor)) is None:
            results[vendor] = {"skipped": f"the {vendor} SDK is not installed"}
            continue
        results[vendor] = anyio.run(run_vendor, vendor, args.n, args.n_life)
    print(f"n={args.n} n_life={args.n_life}; peer praisonai-sandbox "
          f"{'installed' if HAVE_PEER else 'not installed'}")  # fmt: skip
    report(results)
    report_live(live)
    versions = {m: _version(m) for m in ("e2b", "modal", "daytona", "httpx", "tenki", "praisonai-sandbox")}
    meta = {"n": args.n, "n_life": args.n_life, "versions": versions, "peer_installed": HAVE_PEER,
            "note": "calls counted at the wire fakes; no latency through a fake is reported"}  # fmt: skip
    save(args.json, meta, {"fakes": results, "live": live})


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


if __name__ == "__main__":
    main()

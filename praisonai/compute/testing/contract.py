"""The contract's core promises, for every provider: exec (exit codes, output, stdin, timeouts that
kill the tree, caps, env and cwd), files (binary, large, awkward paths, trees) and lifecycle
(idempotent shutdown, instances visible from another process)."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from praisonai import _limits
from praisonai._errors import ConfigError, InstanceNotFoundError, UnsupportedFeatureError
from praisonai._types import Capability, ExecResult
from praisonai.compute import snapshots
from praisonai.compute.testing._kit import Context, Suite

suite = Suite()


# ---- exec ------------------------------------------------------------------------------------


@suite.check()
async def exit_code_stdout_stderr(ctx: Context) -> None:
    r = await ctx.sh("echo out; echo err >&2; exit 3")
    assert (r.stdout, r.stderr, r.exit_code, r.timed_out) == ("out\n", "err\n", 3, False), r
    assert r["exit_code"] == 3 and r["stdout"] == "out\n", "ExecResult must read like a dict"


@suite.check()
async def command_not_found_is_127(ctx: Context) -> None:
    r = await ctx.sh("no-such-command-praisonai")
    assert r.exit_code == 127 and "not found" in r.stderr, r


@suite.check()
async def command_starting_with_dash(ctx: Context) -> None:
    r = await ctx.sh("-praisonai-not-an-option")
    assert r.exit_code == 127, r


@suite.check()
async def stdin_is_closed(ctx: Context) -> None:
    r = await ctx.sh("cat", timeout=20)
    assert r.exit_code == 0 and not r.timed_out and r.duration_s < 10, r


@suite.check()
async def timeout_kills_process_tree(ctx: Context) -> None:
    token = f"100.{uuid.uuid4().int % 10**9}"  # a unique sleep length, to find our processes
    r = await ctx.sh(f"echo before; sh -c 'sleep {token} & sleep {token}'", timeout=1)
    assert r.timed_out and r.exit_code == 124, r
    assert r.stdout == "before\n", f"partial output lost: {r.stdout!r}"
    assert r.duration_s < 1 + _limits.KILL_GRACE_S, f"took {r.duration_s:.1f}s to return"
    # "[s]leep" matches the sleeps but not this grep's own command line; -a: a cmdline is
    # NUL-separated, and grep would take the file as binary, where "." never crosses the NUL.
    left = await ctx.sh(f"grep -al '[s]leep.{token}' /proc/[0-9]*/cmdline 2>/dev/null; true")
    assert left.stdout.strip() == "", f"processes survived the timeout: {left.stdout}"


@suite.check()
async def output_is_capped_head_and_tail(ctx: Context) -> None:
    r = await ctx.sh("echo first; yes | head -c 50000000; echo; echo last")
    assert r.exit_code == 0 and r.truncated, r.exit_code
    assert len(r.stdout) < 2 * _limits.DEFAULT_MAX_OUTPUT_BYTES, len(r.stdout)
    assert r.stdout.startswith("first\n") and r.stdout.endswith("last\n"), "head or tail lost"
    assert "truncated" in r.stdout, "no marker where output was dropped"


@suite.check()
async def env_and_cwd_per_call(ctx: Context) -> None:
    await ctx.sh("mkdir -p 'conformance dir'")
    r = await ctx.sh('echo "$PRAISONAI_X"; pwd', env={"PRAISONAI_X": "a b"}, cwd="conformance dir")
    assert r.stdout.splitlines()[0] == "a b", r
    assert r.stdout.splitlines()[1].endswith("/conformance dir"), r
    again = await ctx.sh('echo "[$PRAISONAI_X]"')
    assert again.stdout == "[]\n", "per-call env leaked into the next call"


@suite.check()
async def missing_working_dir_is_file_not_found(ctx: Context) -> None:
    try:
        await ctx.sh("true", cwd="no/such/dir")
    except FileNotFoundError:
        return
    raise AssertionError("a missing cwd must raise FileNotFoundError")


@suite.check()
async def concurrent_execs(ctx: Context) -> None:
    results: dict[int, ExecResult] = {}

    async def one(i: int) -> None:
        results[i] = await ctx.sh(f"echo {i}")

    async with anyio.create_task_group() as tg:
        for i in range(32):
            tg.start_soon(one, i)
    bad = {i: r for i, r in results.items() if r.stdout != f"{i}\n" or r.exit_code != 0}
    assert len(results) == 32 and not bad, bad


@suite.check()
async def no_host_env_leaks(ctx: Context) -> None:
    os.environ["PRAISONAI_CONFORMANCE_SECRET"] = "leak-me"
    try:
        r = await ctx.sh("env")
    finally:
        del os.environ["PRAISONAI_CONFORMANCE_SECRET"]
    assert "leak-me" not in r.stdout, "a host environment variable reached the instance"


# ---- files -----------------------------------------------------------------------------------


@suite.check()
async def binary_round_trip(ctx: Context) -> None:
    data = bytes(range(256)) * 4
    await ctx.provider.write_file(ctx.instance_id, "bin/all-bytes.bin", data)
    assert await ctx.provider.read_file(ctx.instance_id, "bin/all-bytes.bin") == data
    r = await ctx.sh("wc -c < bin/all-bytes.bin")
    assert r.stdout.strip() == "1024", f"the instance sees {r.stdout!r} bytes"


@suite.check()
async def large_file_round_trip(ctx: Context) -> None:
    data = os.urandom(20 * 1024 * 1024)
    await ctx.provider.write_file(ctx.instance_id, "big.bin", data)
    assert await ctx.provider.read_file(ctx.instance_id, "big.bin") == data
    await ctx.sh("rm big.bin")


@suite.check()
async def exact_text_and_empty_files(ctx: Context) -> None:
    await ctx.provider.write_file(ctx.instance_id, "exact.txt", "no newline")
    assert await ctx.provider.read_file(ctx.instance_id, "exact.txt") == b"no newline"
    await ctx.provider.write_file(ctx.instance_id, "empty", b"")
    assert await ctx.provider.read_file(ctx.instance_id, "empty") == b""


@suite.check()
async def awkward_paths(ctx: Context) -> None:
    path = 'odd dir/it\'s "quoted"/ünïcødé ✓.txt'
    await ctx.provider.write_file(ctx.instance_id, path, "ok")
    assert await ctx.provider.read_file(ctx.instance_id, path) == b"ok"
    r = await ctx.sh('cat "odd dir/it\'s \\"quoted\\"/ünïcødé ✓.txt"')
    assert r.stdout == "ok", r


@suite.check()
async def longest_names_round_trip(ctx: Context) -> None:
    """A name of NAME_MAX bytes, in ASCII and in 3-byte UTF-8 characters, is written, replaced,
    uploaded and read back (a write's temporary name must fit beside any name it stands for, and
    none is left behind); one byte more is refused in one sentence, before the instance is asked."""
    p, i = ctx.provider, ctx.instance_id
    where = f"names-{uuid.uuid4().hex[:8]}"
    longest = ["n" * _limits.MAX_NAME_BYTES, "✓" * (_limits.MAX_NAME_BYTES // 3)]
    try:
        for name in longest:
            path = f"{where}/{name}"
            await p.write_file(i, path, b"first")
            await p.write_file(i, path, b"second")
            assert await p.read_file(i, path) == b"second", f"a {len(name.encode())}-byte name"
            with tempfile.TemporaryDirectory() as tmp:
                Path(tmp, "source").write_bytes(b"uploaded")
                await p.upload_file(i, Path(tmp, "source"), path)
            assert await p.read_file(i, path) == b"uploaded"
        # the shell's glob, not ls: coreutils' statx fails with EINVAL under older gVisor releases
        listed = await ctx.sh(f'for f in {where}/* {where}/.[!.]*; do [ -e "$f" ] && echo "${{f##*/}}"; done')
        assert sorted(listed.stdout.splitlines()) == sorted(longest), f"left behind: {listed.stdout!r}"
        try:
            await p.write_file(i, f"{where}/{'n' * (_limits.MAX_NAME_BYTES + 1)}", b"x")
        except ConfigError as exc:
            assert "too long" in str(exc) and "\n" not in str(exc), exc
        else:
            raise AssertionError("a 256-byte name must be refused in one sentence")
    finally:
        await ctx.sh(f"rm -rf {where}")


@suite.check()
async def absolute_workspace_paths(ctx: Context) -> None:
    await ctx.provider.write_file(ctx.instance_id, "/workspace/abs.txt", "abs")
    assert await ctx.provider.read_file(ctx.instance_id, "abs.txt") == b"abs"


@suite.check()
async def missing_file_is_file_not_found(ctx: Context) -> None:
    try:
        await ctx.provider.read_file(ctx.instance_id, "no-such-file")
    except FileNotFoundError:
        return
    raise AssertionError("reading a missing file must raise FileNotFoundError")


@suite.check()
async def upload_download_tree(ctx: Context) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp, "src")
        (source / "sub dir").mkdir(parents=True)
        (source / "a.txt").write_text("a")
        (source / "sub dir" / "b.bin").write_bytes(bytes(range(256)))
        await ctx.provider.upload_file(ctx.instance_id, source, "tree")
        assert await ctx.provider.read_file(ctx.instance_id, "tree/sub dir/b.bin") == bytes(range(256))
        target = Path(tmp, "back")
        await ctx.provider.download_file(ctx.instance_id, "tree", target)
        assert (target / "a.txt").read_text() == "a"
        assert (target / "sub dir" / "b.bin").read_bytes() == bytes(range(256))
        await ctx.provider.download_file(ctx.instance_id, "tree/a.txt", Path(tmp, "one.txt"))
        assert Path(tmp, "one.txt").read_text() == "a"


# ---- lifecycle -------------------------------------------------------------------------------


@suite.check()
async def config_env_reaches_every_command(ctx: Context) -> None:
    env = {"PRAISONAI_CHECK_A": "a 'b' $c", "PRAISONAI_CHECK_B": "kept"}
    info = await ctx.provider.provision({"env": env})
    try:
        r = await ctx.provider.execute(
            info.instance_id,
            'printf "%s|%s" "$PRAISONAI_CHECK_A" "$PRAISONAI_CHECK_B"',
            env={"PRAISONAI_CHECK_B": "call"},
        )
        assert r.stdout == "a 'b' $c|call", f"the instance's env must reach commands, a call's env win: {r}"
    finally:
        await ctx.provider.shutdown(info.instance_id)


@suite.check()
async def shutdown_is_idempotent(ctx: Context) -> None:
    info = await ctx.provider.provision()
    assert await ctx.provider.shutdown(info.instance_id) is True
    assert await ctx.provider.shutdown(info.instance_id) is False
    try:
        await ctx.provider.get_status(info.instance_id)
    except InstanceNotFoundError:
        return
    raise AssertionError("a removed instance must be InstanceNotFoundError")


@suite.check()
async def visible_across_processes(ctx: Context) -> None:
    output = await ctx.in_child("print(anyio.run(p.provision).instance_id)\n")
    instance_id = output.strip()
    try:
        listed = [i.instance_id for i in await ctx.provider.list_instances()]
        assert instance_id in listed, f"{instance_id} made by another process is not listed"
        r = await ctx.provider.execute(instance_id, "echo hi")
        assert r.stdout == "hi\n", r
    finally:
        removed = await ctx.provider.shutdown(instance_id)
    assert removed, "shutdown from another process did not find the instance"


# ---- the abilities a provider lacks ----------------------------------------------------------


@suite.check()
async def a_missing_ability_is_refused_in_one_sentence(ctx: Context) -> None:
    """Each optional ability the provider does not hold (its capability absent) refuses with one
    sentence naming that capability, and runs nothing."""
    p, iid = ctx.provider, ctx.instance_id
    calls: dict[Capability, Callable[[], Awaitable[object]]] = {
        Capability.PAUSE: lambda: p.pause(iid),
        Capability.PTY: lambda: p.open_pty(iid, command="true"),
        Capability.PORTS: lambda: p.expose(iid, 8080),
        Capability.PROCESSES: lambda: p.processes.start(iid, "true"),
        Capability.SESSIONS: lambda: p.open_session(iid),
        Capability.SNAPSHOT: lambda: snapshots.front(p).take(iid, None),
    }
    for capability, call in calls.items():
        if capability in p.capabilities:
            continue
        try:
            await call()
        except UnsupportedFeatureError as exc:
            said = str(exc)
            assert repr(capability.value) in said and "\n" not in said, said
            continue
        raise AssertionError(f"{p.name} lacks {capability.value!r} yet did not refuse it")

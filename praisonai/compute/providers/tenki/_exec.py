"""One command through Tenki's Run stream (``AsyncSandbox.start``), output streamed as it comes.

``sh -c`` (argv, not a login shell: a ``~/.profile`` ``cd`` would win over ``cwd``), ``cwd`` and
``env`` on the call (never on a command line), stdin written in ``STDIN_CHUNK`` frames then
closed (one frame per payload would pass gRPC's 4 MiB message limit). stdout and stderr arrive
apart, as bytes, each into its own capped buffer and to ``on_output`` while the command runs.
The timeout is the guest's (``timeout=``: SIGTERM, then SIGKILL, partial output, ``timed_out``);
``wait`` is bounded locally a little later in case an old guest agent ignores it (cloud-sdks.md
§4.4). A non-zero exit is a result, not an error; a signal is 128+N.

Who runs what (``compute.separation``, docker's rules): every Run is asked for as ``privileged`` (root,
which frames the results: the guest agent's pipes are root's); the command itself runs as the
instance's command user through ``setpriv`` with no capability, unless ``request.privileged``.
An instance that cannot switch is refused in one sentence (``separation.refusal``).

Trap: the SDK also keeps every chunk of both streams (``AsyncProcessStream._chunks``, for the
``CommandResult`` it builds at the exit) whatever our cap, so 100 MB of output would cost 100 MB
here. :func:`_forget_kept` drops them as we consume them (the one private SDK name we touch).
"""

from __future__ import annotations

import contextlib
import signal
from typing import Any

import anyio

from praisonai._errors import ExecError, PathNotFoundError
from praisonai._output import OutputBuffer, exec_result
from praisonai._types import ExecRequest, ExecResult, Stdin, stdin_chunks
from praisonai.compute import separation
from praisonai.compute.providers.tenki._client import translated

STDIN_CHUNK = 1 << 20
#: The local bound on a command beyond its own timeout, for a guest that ignores it.
GRACE_S = 30.0
_SIGNALS = {
    "terminated": signal.SIGTERM,
    "killed": signal.SIGKILL,
    "interrupt": signal.SIGINT,
    "hangup": signal.SIGHUP,
}


async def feed(proc: Any, data: Stdin | None) -> None:
    """Write ``data`` to the process's stdin in frames as it comes, then close it (``None``: just
    close)."""
    with translated("exec"):
        if data is not None:
            async for chunk in stdin_chunks(data):
                for at in range(0, len(chunk), STDIN_CHUNK):
                    await proc.write_stdin(chunk[at : at + STDIN_CHUNK])
        await proc.close_stdin()


async def run(sandbox: Any, request: ExecRequest, cwd: str, instance_id: str, user: str | None) -> ExecResult:
    """Run ``request`` in ``sandbox`` (``instance_id``'s) from ``cwd`` (absolute) as ``user``
    (``None``: root)."""
    with translated("exec", instance_id=instance_id):
        argv = separation.apart(user, ["sh", "-c", "--", request.command])
        env = dict(request.env) or None
        proc = await sandbox.start(*argv, cwd=cwd, env=env, timeout=request.timeout, privileged=True)
    out, err = OutputBuffer(request.max_output), OutputBuffer(request.max_output)

    async def pour(stream: Any, buffer: OutputBuffer, name: str) -> None:
        with contextlib.suppress(Exception):  # a broken stream: wait() raises the same error
            async for chunk in stream:
                _forget_kept(stream)
                buffer.write(chunk)
                if request.on_output is not None:
                    request.on_output(name, chunk)  # type: ignore[arg-type]

    unfed: list[Exception] = []

    async def give() -> None:
        try:
            await feed(proc, request.stdin)
        except Exception as exc:  # a broken stream: wait() raises it; anything else, below
            unfed.append(exc)

    bound = None if request.timeout is None else request.timeout + GRACE_S
    with translated("exec", instance_id=instance_id):
        with anyio.move_on_after(bound) as local:  # None: no bound
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(pour, proc.stdout, out, "stdout")
                tasks.start_soon(pour, proc.stderr, err, "stderr")
                tasks.start_soon(give)
            result = await proc.wait()
        if local.cancelled_caught:  # the guest did not end it: we do
            await proc.kill()
            return exec_result(None, out, err, timed_out=True)
    if unfed:
        raise unfed[0]
    if separation.refused(user, result.exit_code, err.text()):
        raise ExecError(separation.refusal(user or ""), op="exec")
    return outcome(result, out, err, cwd)


def _forget_kept(stream: Any) -> None:
    """Empty the SDK's copy of a stream's output, which we already have.

    Private SDK state, touched because no public call bounds it: ``AsyncProcessStream`` keeps every
    chunk for ``read()`` and the final ``CommandResult``, which we do not use for a command (our
    buffers keep head and tail). Should a release rename it, this does nothing: more memory, no error.
    """
    kept = getattr(stream, "_chunks", None)
    if isinstance(kept, list):
        kept.clear()


def outcome(result: Any, out: OutputBuffer, err: OutputBuffer, cwd: str) -> ExecResult:
    """A ``CommandResult`` as our result: the guest's timeout, a spawn failure, a signal."""
    if result.timed_out:
        return exec_result(None, out, err, timed_out=True)
    if result.exit_code < 0 and result.errno:
        # The guest could not start the process: with our argv (sh exists) that is the cwd.
        raise PathNotFoundError(f"working directory {cwd} does not exist in the sandbox", op="exec")
    code = result.exit_code
    if result.signal and (code < 0 or code is None):
        code = 128 + int(_SIGNALS.get(result.signal, signal.SIGKILL))
    return exec_result(code, out, err)

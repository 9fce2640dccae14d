"""One command through ``process.exec``, with stdout and stderr kept apart.

Daytona's ``process.exec`` returns stdout and stderr merged in ``result`` (daytonaio/daytona#2067,
#5144), drops all output when its timeout fires, runs the sandbox's default shell (zsh in the
default snapshots) and has no stdin. So the command goes to ``exec`` wrapped in a POSIX ``sh``
script that ``cd``s to the working directory, redirects stdin (``/dev/null``, or a file uploaded
first), and writes stdout and stderr to two files in a job directory outside the workspace. The
exit code is the wrapper's (it ``exec``s the command); the daemon enforces the timeout and kills
the process group. Outputs of at most ``INLINE_BYTES`` together come back in the exec's own
answer, base64 after an ``inline`` line (the wrapper then removes the job directory itself): one
API call per command, as a bare ``exec`` (which would lose stderr). Larger ones, and those of a
timed-out command, come back in one ``download_files`` call (to local temp files, so a huge output
never sits in memory) before the job directory is removed: three calls. Stdin adds an upload.

Output reaches ``on_output`` only once the command has ended (``exec`` does not stream).
"""

from __future__ import annotations

import base64
import math
import posixpath
import shlex
import tempfile
import uuid
from pathlib import Path
from typing import Any

import anyio

from praisonai._errors import PathNotFoundError
from praisonai._output import OutputBuffer, exec_result
from praisonai._tasks import beside
from praisonai._types import ExecRequest, ExecResult, stdin_bytes
from praisonai.compute.providers.daytona._client import answer_lost, translated

JOBS_DIR = "/tmp/.praisonai-exec"
#: ``process.exec`` without a timeout gets the daemon's default of 10 s, so "no limit" is a week.
NO_LIMIT_S = 7 * 24 * 3600
_CHUNK = 1 << 16
#: What the wrapper prints (the only thing it prints: the command's output goes to files) when
#: the working directory is missing.
NO_CWD = "praisonai:no-such-cwd"
#: Outputs up to this size (both streams) travel in the exec's answer instead of a download.
INLINE_BYTES = 48 * 1024
#: The line before them.
INLINE = "praisonai:inline"


def wrapper(job: str, cwd: str, command: str, *, has_stdin: bool, limit: int) -> str:
    """The ``sh`` script ``process.exec`` runs (quoted for whatever shell the sandbox has).

    When the command ends by itself, an output file longer than ``limit`` is cut in the sandbox
    to its head and tail (as ``OutputBuffer`` keeps them) and the wrapper prints ``cut <name>
    <size>``, so a 100 MB output is not downloaded. At a timeout the daemon kills the wrapper too:
    the files come back whole (rare, and bounded by what the command wrote before its deadline).
    """
    q = shlex.quote
    stdin = q(f"{job}/in") if has_stdin else "/dev/null"
    head = limit // 2
    script = (
        f"mkdir -p {q(job)} || exit 125\n"
        f"cd -- {q(cwd)} 2>/dev/null || {{ printf {NO_CWD}; exit 0; }}\n"
        f"sh -c -- {q(command)} <{stdin} >{q(job + '/out')} 2>{q(job + '/err')}\n"
        "rc=$?\n"
        f'for f in out err; do p={q(job)}/$f; n=$(wc -c < "$p"); if [ "$n" -gt {limit} ]; then '
        f'head -c {head} "$p" > "$p.cut"; tail -c {limit - head} "$p" >> "$p.cut"; '
        'mv "$p.cut" "$p"; echo "cut $f $n"; fi; done\n'
        f"o={q(job + '/out')} e={q(job + '/err')}\n"
        f'if [ $(($(wc -c < "$o") + $(wc -c < "$e"))) -le {INLINE_BYTES} ] && command -v base64 >/dev/null\n'
        "then\n"
        f'  echo {INLINE}; base64 < "$o"; echo .; base64 < "$e"; rm -rf -- {q(job)}\n'
        "fi\n"
        "exit $rc\n"
    )
    return f"sh -c {q(script)}"


async def run(sandbox: Any, request: ExecRequest, cwd: str, renew: Any) -> ExecResult:
    """Run ``request`` in ``sandbox`` (an ``AsyncSandbox``) from ``cwd``; ``renew`` is called
    while it runs, so Daytona's idle auto-stop does not stop a sandbox whose only activity is
    this command (processes inside do not count as activity)."""
    from daytona import DaytonaProcessExecutionTimeoutError, FileDownloadRequest

    job = f"{JOBS_DIR}/{uuid.uuid4().hex}"
    stdin = await stdin_bytes(request.stdin)  # Daytona's exec takes no input: a file holds it
    if stdin is not None:
        with translated("exec"):
            await sandbox.fs.upload_file(stdin, f"{job}/in")
    timeout = NO_LIMIT_S if request.timeout is None else max(1, math.ceil(request.timeout))
    script = wrapper(job, cwd, request.command, has_stdin=request.stdin is not None, limit=request.max_output)

    async def execute() -> tuple[int | None, str, bool]:
        with translated("exec"), answer_lost("exec"):
            try:
                response = await sandbox.process.exec(script, env=dict(request.env) or None, timeout=timeout)
            except DaytonaProcessExecutionTimeoutError:
                return (
                    None,
                    "",
                    True,
                )  # the daemon killed the process group; the files keep the partial output
            return response.exit_code, response.result, False

    # beside(), not a bare task group: the exec's error is raised as itself, never in an ExceptionGroup
    status, said, timed_out = await beside(execute, renew)
    if said.strip() == NO_CWD:
        with translated("exec"):
            await sandbox.fs.delete_file(job, recursive=True)
        raise PathNotFoundError(f"working directory {cwd} does not exist in the sandbox", op="exec")
    out, err = OutputBuffer(request.max_output), OutputBuffer(request.max_output)
    sizes = {
        words[1]: int(words[2])
        for words in (line.split() for line in said.splitlines())
        if len(words) == 3 and words[0] == "cut"
    }
    if INLINE in said:
        texts = said.partition(INLINE)[2].split("\n.\n", 1)
        for (name, buffer), text in zip((("stdout", out), ("stderr", err)), texts, strict=True):
            data = base64.b64decode("".join(text.split()))
            _head(buffer, name, request, data, sizes.get(name[3:]))
            _emit(buffer, name, request, data[buffer.head_size if name[3:] in sizes else 0 :])
        return exec_result(status, out, err, timed_out=timed_out)
    with tempfile.TemporaryDirectory(prefix="praisonai-daytona-") as tmp:
        wanted = {name: str(Path(tmp, name)) for name in ("out", "err")}
        with translated("exec"):
            results = await sandbox.fs.download_files(
                [
                    FileDownloadRequest(source=f"{job}/{name}", destination=local)
                    for name, local in wanted.items()
                ]
            )
            await sandbox.fs.delete_file(job, recursive=True)
        got = {posixpath.basename(r.source): r for r in results if not r.error}
        for name, buffer in (("stdout", out), ("stderr", err)):
            if name[3:] in got:
                await _pour(Path(wanted[name[3:]]), buffer, name, request, sizes.get(name[3:]))
    return exec_result(status, out, err, timed_out=timed_out)


async def _pour(local: Path, buffer: OutputBuffer, name: str, request: ExecRequest, size: int | None) -> None:
    """Feed a downloaded output file to its buffer (see :func:`_head` for a cut one)."""
    async with await anyio.open_file(local, "rb") as f:
        if size is not None:
            _head(buffer, name, request, await f.read(buffer.head_size), size)
        while chunk := await f.read(_CHUNK):
            _emit(buffer, name, request, chunk)


def _head(buffer: OutputBuffer, name: str, request: ExecRequest, data: bytes, size: int | None) -> None:
    """An output cut in the sandbox (``size`` is what the command wrote, ``None``: not cut) is
    its head, then the count of dropped bytes, then its tail: take the head and count the rest."""
    if size is not None:
        _emit(buffer, name, request, data[: buffer.head_size])
        buffer.skip(size - buffer.head_size - buffer.tail_size)


def _emit(buffer: OutputBuffer, name: str, request: ExecRequest, chunk: bytes) -> None:
    if chunk:
        buffer.write(chunk)
        if request.on_output is not None:
            request.on_output(name, chunk)  # type: ignore[arg-type]

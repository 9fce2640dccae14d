"""Commands through Fly's exec endpoint, which answers 408 past about 30 s and returns its output
as JSON strings (not binary-safe) with no ``cwd``, ``env`` or streaming.

Every exec runs the same fixed command line, ``sh -c BOOT``: BOOT decodes a script from the
exec's ``stdin`` (base64) and runs it. So working directory, env values, stdin data and the
command itself travel in the request body, never on a command line. The script starts the command
in its own process group in the background (``setsid``), writing stdout, stderr and its exit code
to files in a job directory, and waits for it at most ``WAIT_S`` seconds: a command that ends by
then is answered in that one call, its outputs base64 after a ``done`` line (cut in the machine to
their head and tail beyond ``max_output``). A longer one is polled with further short execs, each
waiting up to ``WAIT_S`` again, so no exec comes near Fly's limit; at the command's own deadline
one more exec kills its process group and returns what it wrote. Once its result is read the job
directory becomes ``<job>.read``, which a later exec removes after two minutes: a step whose
answer was lost can read it again. A step Fly answers with 408 anyway (a loaded machine) is not the end:
polls only read the job, so they are sent again (up to ``STEP_RETRIES`` in a row); after a
start that got 408 the job is polled, and if it does not exist the command never ran and the 408
is raised.

Output reaches ``on_output`` only once the command has ended (the endpoint does not stream).

Who runs what (``compute.separation``, docker's rules): the exec itself is root's, and so is all that
frames a result: the job directories (0700 under a root-owned ``JOBS_DIR``), the files in them,
the runner that waits for the command and writes its exit code, the watchdog and its spool. The
command runs as the instance's command user through ``setpriv`` with no capability, its stdin,
stdout and stderr files opened by the root runner (mode 0600) and inherited, so no command can
open, rewrite or signal another's framing. ``privileged`` runs one command as root instead.
"""

from __future__ import annotations

import base64
import math
import posixpath
import shlex
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping

from praisonai._errors import ExecError, PathNotFoundError
from praisonai._output import OutputBuffer, exec_result
from praisonai._types import ExecRequest, ExecResult, stdin_bytes
from praisonai.compute import separation

#: The shared watchdog's spool (``compute/watchdog.py``), the machine's PID 1: it exits (and
#: ``auto_destroy`` removes the machine) once the instance's Lifetime says so, so a machine whose
#: client died still goes away; Fly has neither idle stop nor ttl natively. Each exec marks
#: ``alive`` there (and wakes the watchdog through ``.wake`` while ``.asleep`` says it waits for a
#: deadline), and a job runs as ``x/<job>.p`` ("<pid> <pid>") while its runner lives.
SPOOL = "/tmp/.praisonai-spool"
JOBS_DIR = "/tmp/.praisonai-exec"
#: Mark activity, decode the script from stdin to a file and run it (the only command line Fly
#: ever sees), with the umask the exec came with as its ``$1`` (commands get it back) and 077 for
#: everything else. The file is in JOBS_DIR, which must be this user's own (a command could
#: have made it first, to swap the script between its write and its run): else nothing runs.
BOOT = (
    f": 2>/dev/null >{SPOOL}/alive; "
    f"[ ! -s {SPOOL}/.asleep ] || echo 2>/dev/null 1<>{SPOOL}/.wake; "
    f"u=$(umask); umask 077; d={JOBS_DIR}; mkdir -p $d 2>/dev/null; "
    "{ [ -O $d ] && [ ! -L $d ]; } "
    '|| { echo "$d belongs to another user: refusing to run there" >&2; exit 125; }; '
    'f=$d/.s.$$; base64 -d > "$f" && sh "$f" "$u"; rc=$?; rm -f "$f"; exit $rc'
)
#: sh -c RUNNER sh JOB MARKER UMASK ARGV...: runs ARGV on the job's files (opened here, as root,
#: and inherited) with the exec's umask, then writes its exit code and removes the watchdog's marker.
#: ARGV runs in a subshell that holds the redirections, so the "Killed" that sh says of a command
#: killed by a signal goes to the runner's own stderr (nowhere), not into the command's.
RUNNER = (
    'j=$1 m=$2 u=$3; shift 3; umask "$u"; ( exec "$@" <"$j/in" >"$j/out" 2>"$j/err" ); r=$?; umask 077; '
    'echo $r > "$j/rc.t"; mv "$j/rc.t" "$j/rc"; rm -f -- "$m"'
)
#: Longest wait inside one exec: well under the ~30 s after which Fly answers 408.
WAIT_S = 20.0
NO_CWD = "praisonai:no-such-cwd"
DONE = "praisonai:done"
RUNNING = "praisonai:running"
NO_JOB = "praisonai:no-job"
STEP_RETRIES = 3  # 408s in a row on one job before giving up


class StepTimedOut(ExecError):
    """Fly answered one exec step with 408 (past its ~30 s limit)."""


#: ``call(script, wait_s)``: run ``script`` through one exec, return its stdout.
Call = Callable[[str, float], Awaitable[str]]


def stdin_for(script: str) -> str:
    """The exec's ``stdin`` that BOOT turns back into ``script``."""
    return base64.b64encode(script.encode()).decode()


def exports(env: Mapping[str, str]) -> str:
    """``export`` lines for ``env`` whose values are decoded in the machine (any byte survives,
    a trailing newline too); the names were checked as identifiers by ``checked_env``."""
    lines = []
    for key, value in env.items():
        b64 = base64.b64encode(value.encode()).decode()
        lines.append(f'{key}="$(printf %s {b64} | base64 -d; echo x)"; export {key}="${{{key}%x}}"\n')
    return "".join(lines)


def heredoc(data: bytes, redirect: str) -> str:
    """Lines writing ``data`` through ``base64 -d`` to ``redirect`` (``> file`` or ``>> file``)."""
    b64 = base64.encodebytes(data).decode()
    return f"base64 -d {redirect} <<'PRAISONAI_EOF'\n{b64}PRAISONAI_EOF\n"


def start_script(
    job: str, cwd: str, request: ExecRequest, wait_s: float, stdin: bytes | None, user: str | None
) -> str:
    """Start ``request`` in the background from ``cwd``, with ``stdin`` (its input, gathered), as
    ``user`` (``None``: root), and wait for it (see the module docstring)."""
    q = shlex.quote
    feed = heredoc(stdin, f"> {q(job)}/in") if stdin is not None else f": > {q(job)}/in\n"
    marker = f"{SPOOL}/x/{posixpath.basename(job)}.p"
    argv = separation.dropped(user, ["/bin/sh", "-c", "--", request.command])
    return (
        (separation.check(user) if user else "")
        # results read more than 2 minutes ago: no lost answer will ask for them again
        + f"find {JOBS_DIR} -maxdepth 1 -name '*.read' -mmin +2 -exec rm -rf {{}} + 2>/dev/null\n"
        f"mkdir -p {q(job)} && : > {q(job)}/out && : > {q(job)}/err || exit 125\n"
        f"cd -- {q(cwd)} 2>/dev/null || {{ rm -rf -- {q(job)}; echo {NO_CWD}; exit 0; }}\n"
        + exports(request.env)
        + feed
        + f'setsid sh -c {q(RUNNER)} sh {q(job)} {q(marker)} "$1" {shlex.join(argv)} '
        "</dev/null >/dev/null 2>&1 &\n"
        f'echo $! > {q(job)}/pid; echo "$! $!" 2>/dev/null > {q(marker)}\n'
        + poll_script(job, request.max_output, wait_s)
    )


def poll_script(job: str, limit: int, wait_s: float, *, kill: bool = False) -> str:
    """Wait up to ``wait_s`` for the job; print its result (or RUNNING); ``kill``: kill it first."""
    q = shlex.quote
    j = q(job)
    head = limit // 2
    # dash's kill takes no "--": a negative pid right after the signal is the group
    killer = f'kill -KILL -"$(cat {j}/pid)" 2>/dev/null; sleep 0.2\n' if kill else ""
    ticks = max(0, math.ceil(wait_s * 10))
    # a result already read (its answer lost to a 408) is read again; no job at all: NO_JOB
    missing = f"[ -d {j} ] || mv {j}.read {j} 2>/dev/null || {{ echo {NO_JOB}; exit 0; }}\n"
    pending = "" if kill else f"if [ ! -f {j}/rc ]; then echo {RUNNING}; exit 0; fi\n"
    return (
        missing
        + killer
        + f"i=0; while [ ! -f {j}/rc ] && [ $i -lt {ticks} ]; do sleep 0.1; i=$((i+1)); done\n"
        + pending
        + f'for f in out err; do p={j}/$f; n=$(wc -c < "$p"); if [ "$n" -gt {limit} ]; then '
        f'head -c {head} "$p" > "$p.cut"; tail -c {limit - head} "$p" >> "$p.cut"; '
        f'mv "$p.cut" "$p"; echo "cut $f $n" >> {j}/cuts; fi; done; cat {j}/cuts 2>/dev/null\n'
        f'echo {DONE} "$(cat {j}/rc 2>/dev/null || echo -)"; base64 < {j}/out; echo .; base64 < {j}/err\n'
        f"touch {j}; mv -- {j} {j}.read\n"  # touched: the two minutes start now
    )


async def run(call: Call, request: ExecRequest, cwd: str, user: str | None) -> ExecResult:
    """Run ``request`` from ``cwd`` as ``user`` (``None``: root) through ``call``, polling past
    ``WAIT_S``; its result."""
    job = f"{JOBS_DIR}/{uuid.uuid4().hex}"
    deadline = None if request.timeout is None else time.monotonic() + request.timeout
    wait = WAIT_S if deadline is None else min(WAIT_S, request.timeout or 0.0)
    late: StepTimedOut | None = None
    script = start_script(job, cwd, request, wait, await stdin_bytes(request.stdin), user)  # no stdin stream
    try:
        said = await call(script, wait)
    except StepTimedOut as exc:  # it may have started: ask the job
        said, late = RUNNING, exc
    if said.strip() == NO_CWD:
        raise PathNotFoundError(f"working directory {cwd} does not exist in the machine", op="exec")
    timed_out, misses = False, 0
    while RUNNING in said.splitlines():
        left = WAIT_S if deadline is None else deadline - time.monotonic()
        timed_out = left <= 0
        wait = min(WAIT_S, max(0.0, left))
        try:
            said = await call(poll_script(job, request.max_output, wait, kill=timed_out), wait)
            misses = 0
        except StepTimedOut:
            misses += 1
            if misses >= STEP_RETRIES:
                raise
            said = RUNNING
        if said.strip() == NO_JOB:  # the start's 408 stands (it never ran), or a result was lost
            raise late or ExecError(
                "Fly's exec endpoint answered 408 while the command's result was read", op="exec"
            )
        late = None
    return _result(said, request, timed_out)


def _result(said: str, request: ExecRequest, timed_out: bool) -> ExecResult:
    lines = said.splitlines()
    status_line = next(line for line in lines if line.startswith(DONE))
    code = status_line.split()[1] if len(status_line.split()) > 1 else "-"
    sizes = {w[1]: int(w[2]) for w in (line.split() for line in lines) if len(w) == 3 and w[0] == "cut"}
    texts = said.partition(status_line)[2].split("\n.\n", 1)
    out, err = OutputBuffer(request.max_output), OutputBuffer(request.max_output)
    for (name, buffer), text in zip((("stdout", out), ("stderr", err)), texts, strict=True):
        data = base64.b64decode("".join(text.split()))
        size = sizes.get(name[3:])
        if size is not None:  # cut in the machine: its head, the dropped count, its tail
            _emit(buffer, name, request, data[: buffer.head_size])
            buffer.skip(size - buffer.head_size - buffer.tail_size)
            data = data[buffer.head_size :]
        _emit(buffer, name, request, data)
    return exec_result(None if timed_out or not code.isdigit() else int(code), out, err, timed_out=timed_out)


def _emit(buffer: OutputBuffer, name: str, request: ExecRequest, chunk: bytes) -> None:
    if chunk:
        buffer.write(chunk)
        if request.on_output is not None:
            request.on_output(name, chunk)  # type: ignore[arg-type]

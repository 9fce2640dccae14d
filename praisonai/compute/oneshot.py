"""Background processes for providers whose exec is native and one-shot: no byte stream into
the instance to keep a helper on (Daytona's ``process.exec``, a REST exec endpoint).

Each operation runs the instance helper (``praisonai.runtime``) once through the provider's own
exec: one request in, its reply out, then the helper exits. The processes it starts live on
under ``SPOOL/bg/<id>`` exactly as a channel-backed provider's do (same layout, same kill sweep
that reaches detached descendants), so any process can list, read, wait for or kill them by id.
The helper script and the request travel in the exec's env, never on its command line
(``runtime.oneshot``). Output is read back with the provider's native file read (binary-safe,
whatever its exec does to non-UTF-8 bytes).

Where the provider runs commands apart from their framing (``command_user``), the helper runs
as root (a privileged exec) and starts the processes as the command user, so their spool is
root's and no command can rewrite another's output or exit code; their output is read as root
(``read_spool``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Literal

from praisonai._errors import ExecError
from praisonai._limits import ERROR_DETAIL_CHARS
from praisonai._types import Capability, ExecRequest, ExecResult, ProcessInfo
from praisonai.compute.abilities._refusal import unsupported
from praisonai.runtime import processes
from praisonai.runtime.oneshot import one_shot

SPOOL = "/tmp/.praisonai"
_HELPER_TIMEOUT_S = 60.0


async def _no_command_user(instance_id: str) -> None:
    """Commands share the helper's user."""
    return None


class OneShotProcesses:
    """A provider's processes part through one helper run per request (see the module
    docstring). ``ProcessInfo.cwd`` is the working directory as the caller gave it ("." for the
    instance's). It keeps no bound env: ``bind_env`` refuses.

    Built from the provider's ``name``, its ``run`` (``_exec``, honouring cwd, env and
    ``privileged``), ``read_spool`` (a file of the helper's spool, read as the helper's user) and
    ``command_user`` (``"UID:GID"`` its commands run as apart from root, or ``None``; by default
    always ``None``).
    """

    def __init__(
        self,
        name: str,
        run: Callable[[str, ExecRequest], Awaitable[ExecResult]],
        read_spool: Callable[[str, str], Awaitable[bytes]],
        command_user: Callable[[str], Awaitable[str | None]] = _no_command_user,
    ) -> None:
        self._name, self._run, self._read_spool, self._command_user = name, run, read_spool, command_user

    async def _helper(
        self, instance_id: str, function: str, *args: str, cwd: str | None = None
    ) -> tuple[str, bytes]:
        """Run ``function(*args)`` in a fresh helper from ``cwd``; return its (status, body)."""
        request = one_shot(SPOOL, function, *args, user=await self._command_user(instance_id))
        asked = ExecRequest(
            request.command, cwd=cwd, env=request.env, timeout=_HELPER_TIMEOUT_S, privileged=True
        )
        result = await self._run(instance_id, asked)
        answer = request.reply(result.stdout.encode())
        if answer is None:
            why = result.stderr.strip()[-ERROR_DETAIL_CHARS:] or f"exit code {result.exit_code}, no reply"
            raise ExecError(f"the instance helper did not answer ({function}): {why}", op="process")
        return answer

    async def start(
        self, instance_id: str, command: str, cwd: str | None, env: Mapping[str, str]
    ) -> ProcessInfo:
        info, args = processes.start_request(command, cwd or ".", env)
        args[1] = "."  # the exec itself runs from cwd, resolved by the provider as any command's
        status, _ = await self._helper(instance_id, "__p_start", *args, cwd=cwd)
        processes.check_started(status, info.cwd, SPOOL)
        return info

    async def started(self, instance_id: str, only: str | None = None) -> list[ProcessInfo]:
        _, listing = await self._helper(instance_id, "__p_ps", *([only] if only else []))
        return processes.parse_listing(listing)

    async def output(
        self, instance_id: str, process_id: str, stream: Literal["out", "err"], offset: int, limit: int | None
    ) -> bytes:
        data = await self._read_spool(instance_id, processes.process_file(SPOOL, process_id, stream))
        return data[offset:] if limit is None else data[offset : offset + limit]

    async def kill(self, instance_id: str, process_id: str) -> None:
        await self._helper(instance_id, "__p_kill", *processes.kill_args(SPOOL, process_id))

    async def bind_env(self, instance_id: str, env: Mapping[str, str]) -> None:
        raise unsupported(self._name, "binding env to an instance", "bind_env", Capability.PROCESSES)

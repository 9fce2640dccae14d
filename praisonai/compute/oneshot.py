"""Background processes for providers whose exec is native and one-shot: no byte stream into
the instance to keep a helper on (Daytona's ``process.exec``, a REST exec endpoint).

Each operation runs the instance helper (``praisonai.runtime``) once through the provider's own
``_exec``: one request in, its reply out, then the helper exits. The processes it starts live on
under ``SPOOL/bg/<id>`` exactly as a channel-backed provider's do (same layout, same kill sweep
that reaches detached descendants), so any process can list, read, wait for or kill them by id.
The helper script and the request travel in the exec's env, never on its command line
(``runtime.oneshot``). Output is read back with the provider's native file read (binary-safe,
whatever its exec does to non-UTF-8 bytes).

Where the provider runs commands apart from their framing (``_command_user``), the helper runs
as root (a privileged exec) and starts the processes as the command user, so their spool is
root's and no command can rewrite another's output or exit code; their output is read as root
(``_read_spool``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from praisonai._errors import ExecError
from praisonai._limits import ERROR_DETAIL_CHARS
from praisonai._types import ExecRequest, ProcessInfo
from praisonai.compute import _activity
from praisonai.compute.base import ComputeProvider
from praisonai.compute.requests import checked_env
from praisonai.runtime import processes
from praisonai.runtime.oneshot import one_shot

SPOOL = "/tmp/.praisonai"
_HELPER_TIMEOUT_S = 60.0


class OneShotProcesses(ComputeProvider):
    """Background processes through one helper run per request (see the module docstring).

    A provider subclasses it before :class:`ComputeProvider`, declares ``Capability.PROCESSES``,
    and needs nothing else: ``_exec`` (with ``cwd`` and ``env``) and ``_read`` are its own.
    ``ProcessInfo.cwd`` is the working directory as the caller gave it ("." for the instance's).
    """

    async def _command_user(self, instance_id: str) -> str | None:
        """``"UID:GID"`` the instance's commands run as apart from root (``compute.separation``), or
        ``None``: they share the helper's user. Default: None."""
        return None

    async def _read_spool(self, instance_id: str, path: str) -> bytes:
        """A file of the helper's spool, read as the helper's user. Default: ``_read``."""
        return await self._read(instance_id, path)

    async def _helper(
        self, instance_id: str, function: str, *args: str, cwd: str | None = None
    ) -> tuple[str, bytes]:
        """Run ``function(*args)`` in a fresh helper from ``cwd``; return its (status, body)."""
        request = one_shot(SPOOL, function, *args, user=await self._command_user(instance_id))
        asked = ExecRequest(
            request.command, cwd=cwd, env=request.env, timeout=_HELPER_TIMEOUT_S, privileged=True
        )
        result = await self._exec(instance_id, asked)
        answer = request.reply(result.stdout.encode())
        if answer is None:
            why = result.stderr.strip()[-ERROR_DETAIL_CHARS:] or f"exit code {result.exit_code}, no reply"
            raise ExecError(f"the instance helper did not answer ({function}): {why}", op="process")
        return answer

    async def start_process(
        self, instance_id: str, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> ProcessInfo:
        self._check_id(instance_id)
        _activity.touch(instance_id)
        info, args = processes.start_request(command, cwd or ".", checked_env(env or {}))
        args[1] = "."  # the exec itself runs from cwd, resolved by the provider as any command's
        status, _ = await self._helper(instance_id, "__p_start", *args, cwd=cwd)
        processes.check_started(status, info.cwd, SPOOL)
        return info

    async def list_processes(self, instance_id: str) -> list[ProcessInfo]:
        self._check_id(instance_id)
        _activity.touch(instance_id)
        return processes.parse_listing((await self._helper(instance_id, "__p_ps"))[1])

    async def get_process(self, instance_id: str, process_id: str) -> ProcessInfo:
        self._check_id(instance_id)
        _activity.touch(instance_id)
        wanted = processes.checked_id(process_id)
        found = processes.parse_listing((await self._helper(instance_id, "__p_ps", wanted))[1])
        return processes.found_one(found, process_id, instance_id)

    async def read_process_output(
        self,
        instance_id: str,
        process_id: str,
        *,
        stream: Literal["stdout", "stderr"] = "stdout",
        offset: int = 0,
        limit: int | None = None,
    ) -> bytes:
        await self.get_process(instance_id, process_id)
        name: Literal["out", "err"] = "out" if stream == "stdout" else "err"
        data = await self._read_spool(instance_id, processes.process_file(SPOOL, process_id, name))
        return data[offset:] if limit is None else data[offset : offset + limit]

    async def kill_process(self, instance_id: str, process_id: str) -> None:
        await self.get_process(instance_id, process_id)
        await self._helper(instance_id, "__p_kill", *processes.kill_args(SPOOL, process_id))

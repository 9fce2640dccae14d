"""The channel of a kubernetes instance: one ``pods/exec`` WebSocket to the helper (``_transport``),
reopened on demand, a terminal's exec of its own with a TTY (``_pty``), the working dir and
command user read back from the pod, and trees in and out through the helper (``_trees``)."""

from __future__ import annotations

import functools
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.from_thread
from kubernetes.client import ApiException

from praisonai._errors import ExecError
from praisonai._limits import ERROR_DETAIL_CHARS
from praisonai._types import Capability, ExecRequest, InstanceInfo
from praisonai.compute.abilities import part
from praisonai.compute.channel import ChannelMixin
from praisonai.compute.providers.kubernetes import _pod, _pty, _trees
from praisonai.compute.providers.kubernetes._api import translated
from praisonai.compute.providers.kubernetes._transport import PodExecTransport, open_exec
from praisonai.compute.separation import own_shell, session, user_of


class PodChannels(ChannelMixin):
    """``KubernetesCompute``'s channel to its pods' helpers, terminals and tree transfers."""

    if TYPE_CHECKING:
        _workdirs: dict[str, str]
        _users: dict[str, str | None]

        @property
        def core(self) -> Any: ...
        @property
        def namespace(self) -> str: ...

        def _pod_of(self, instance_id: str, op: str) -> str | None: ...
        async def _status(self, instance_id: str) -> InstanceInfo: ...
        async def _claim_annotations(self, instance_id: str) -> dict[str, str]: ...

    # ---- the channel: one exec WebSocket per instance --------------------------------------

    def _transport(self, instance_id: str, argv: list[str], *, tty: bool = False) -> PodExecTransport:
        name = self._pod_of(instance_id, "exec") or _pod.pod_name(instance_id)
        with translated("exec", f"pod {name}"):
            try:
                ws = open_exec(self.core, self.namespace, name, own_shell(argv), tty=tty)
            except ApiException as exc:
                if exc.status == 0:  # the client reports a refused upgrade as status 0
                    raise ExecError(f"could not exec in pod {name}: {exc.reason}", op="exec") from exc
                raise
        return PodExecTransport(ws)

    def _session_transport(self, instance_id: str, argv: list[str]) -> PodExecTransport:
        """A session shell, as the command user, whose commands keep the pod alive only while this
        client is connected: the pod runs the same watchdog and spool as a docker instance
        (``watchdog.guarded_session``). Called in a worker thread of the session's loop."""
        user = anyio.from_thread.run(self._command_user, instance_id)
        return self._transport(instance_id, session(self._spool(instance_id), user, argv))

    @part(Capability.PTY)
    def terminals(self) -> _pty.PodTerminals:
        """An exec of its own with a TTY, run as the instance's commands are (see ``_pty``)."""
        return _pty.PodTerminals(
            self._channels,
            self._transport,
            spool=self._spool,
            cwd=self._channel_cwd,
            command_user=self._command_user,
        )

    async def _workdir(self, instance_id: str) -> str:
        if instance_id not in self._workdirs:
            await self._look_up(instance_id)
        return self._workdirs[instance_id]

    async def _command_user(self, instance_id: str) -> str | None:
        if instance_id not in self._users:
            await self._look_up(instance_id)
        return self._users[instance_id]

    async def _look_up(self, instance_id: str) -> None:
        """The instance's working dir and command user, from its pod's annotations, a claimed
        pod's from its claim's (a pod made before either was written has the working dir /, and
        commands as its own user)."""
        info = await self._status(instance_id)
        found = {**info.labels, _pod.LABEL_WORKDIR: str(info.metadata["working_dir"])}
        found.update(await self._claim_annotations(instance_id))
        self._workdirs[instance_id] = found[_pod.LABEL_WORKDIR]
        self._users[instance_id] = user_of(found)

    async def _channel_path(self, instance_id: str, path: str) -> str:
        return posixpath.normpath(posixpath.join(await self._workdir(instance_id), path))

    # ---- trees: a tar through the helper (``_trees``) ----------------------------------------

    async def _shell(
        self, instance_id: str, script: str, op: str, *, privileged: bool = False, stdin: bytes | None = None
    ) -> str:
        """``script``'s stdout, run in ``/`` as the commands' uid (``privileged``: as root), with
        ``stdin``; a failure raises ``ExecError`` with the end of its stderr."""
        request = ExecRequest(script, cwd="/", timeout=600, privileged=privileged, stdin=stdin)
        result = await self._channel_exec(instance_id, request)
        if result.exit_code != 0:
            raise ExecError(f"{op} failed in the pod: {result.stderr.strip()[-ERROR_DETAIL_CHARS:]}", op=op)
        return str(result.stdout)

    async def _upload(self, instance_id: str, local: Path, remote: str) -> None:
        await self._tree_transfers.upload(instance_id, local, remote)

    async def _download(self, instance_id: str, remote: str, local: Path) -> None:
        await self._tree_transfers.download(instance_id, remote, local)

    @functools.cached_property
    def _tree_transfers(self) -> _trees.Trees:
        return _trees.Trees(self._channel_path, self._shell, self._channels)


__all__ = ["PodChannels"]

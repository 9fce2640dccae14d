"""Provisioning from a warm pool: a ``SandboxClaim`` of ours against the pool
(``_agent_sandbox``), the pod it binds made ours (identity, command user, working dir, env)."""

from __future__ import annotations

import functools
import shlex
from typing import TYPE_CHECKING, Any

from kubernetes import client

from praisonai._types import InstanceInfo
from praisonai.compute._threads import run_blocking
from praisonai.compute.config import ComputeConfig
from praisonai.compute.providers.kubernetes import _agent_sandbox, _pod
from praisonai.compute.providers.kubernetes._options import KubernetesOptions
from praisonai.compute.separation import command_user, labelled


class WarmClaims:
    """``KubernetesCompute``'s claims of warm-pool pods."""

    if TYPE_CHECKING:
        _warm_checked: bool
        _claims: dict[str, str]
        _pods: dict[str, str]
        _workdirs: dict[str, str]
        _users: dict[str, str | None]
        _options: KubernetesOptions

        @property
        def namespace(self) -> str: ...

        def _client(self) -> Any: ...
        async def _ensure_policy(self, instance_id: str, cfg: ComputeConfig) -> None: ...
        async def _create_or_adopt(self, what: str, instance_id: str, create: Any, read: Any) -> Any: ...
        async def _read_call(self, op: str, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any: ...
        async def _until_ready(self, pod: str) -> Any: ...
        async def _shell(
            self,
            instance_id: str,
            script: str,
            op: str,
            *,
            privileged: bool = False,
            stdin: bytes | None = None,
        ) -> str: ...
        async def _hand_over(self, instance_id: str, where: str, op: str) -> None: ...
        @property
        def processes(self) -> Any: ...

    async def _claim_annotations(self, instance_id: str) -> dict[str, str]:
        """The annotations of the instance's claim, when its pod is a claimed one (``{}`` else):
        ours, where the pod's copy of them may lag (the controller merges them onto it)."""
        claim = self._claims.get(instance_id)
        if claim is None:
            return {}
        read = functools.partial(_agent_sandbox.claim_annotations, self._client(), self.namespace, claim)
        found: dict[str, str] = await self._read_call("exec", f"sandbox claim {claim}", read)
        return found

    async def _claim(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], pool: str
    ) -> InstanceInfo:
        """A pod of the warm pool, through a SandboxClaim (see ``_agent_sandbox``); the env is bound after
        the claim (the pool's pods were made before anyone asked for it)."""
        if not self._warm_checked:
            await run_blocking(functools.partial(_agent_sandbox.check_installed, self._client(), pool))
            self._warm_checked = True
        await self._ensure_policy(instance_id, cfg)
        name, ns = _pod.pod_name(instance_id), self.namespace
        user = command_user(cfg)
        meta = _pod.identity(labelled(labels, user), cfg.working_dir, {_agent_sandbox.LABEL_CLAIM: name})
        body = _agent_sandbox.claim_manifest(name, pool, meta, cfg.lifetime.ttl_s)
        custom: Any = client.CustomObjectsApi(self._client())
        where = (_agent_sandbox.CLAIM_GROUP, _agent_sandbox.VERSION, ns, _agent_sandbox.CLAIMS)
        await self._create_or_adopt(
            f"sandbox claim {name}",
            instance_id,
            functools.partial(custom.create_namespaced_custom_object, *where, body),
            functools.partial(custom.get_namespaced_custom_object, *where, name),
        )
        self._claims[instance_id] = name
        wait = functools.partial(
            _agent_sandbox.until_claimed, self._client(), ns, name, pool, self._options.ready_timeout_s
        )
        found = await self._read_call("provision", f"sandbox claim {name}", wait)
        pod = await self._until_ready(found)
        self._pods[instance_id], self._workdirs[instance_id] = found, cfg.working_dir
        self._users[instance_id] = user
        # ours over the pool's: the controller's merge of them onto the pod may lag its Ready
        pod.metadata.annotations = {**(pod.metadata.annotations or {}), **meta["annotations"]}
        mkdir = f"mkdir -p -- {shlex.quote(cfg.working_dir)}"
        await self._shell(instance_id, mkdir, "provision", privileged=True)
        await self._hand_over(instance_id, cfg.working_dir, "provision")  # the pool's image made it
        if cfg.env:
            await self.processes.bind_env(instance_id, cfg.env)
        return _pod.info_of(pod)

"""Docker captures: a container committed after packages and setup, reused by later provisions.

A capture is the image ``praisonai-capture:<tag>`` (the tag is one-way in the capture key, so it
names the definition's exact content without revealing env values). The definition's env never
enters the container's config (the provider binds it through the helper), so neither ``Config.Env``
nor ``ContainerConfig.Env`` of the image can hold a value; the helper's spool, where the bound env
lives, is emptied first, and the committed image is checked: one that holds a value anyway is
removed, and the capture fails. When each capture was last used is kept under
``$PRAISONAI_HOME/captures``. A capture carries the label of the home that made it: listing and
pruning see only this home's (another home on the same engine keeps its own), while a provision may
start from any home's. All functions block; the engine's :class:`DockerCapturer` calls them in
worker threads."""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from praisonai._errors import ConfigError, ProvisionError
from praisonai._home import praisonai_home
from praisonai._ledger import home_tag
from praisonai._types import CaptureInfo, InstanceInfo
from praisonai.compute.abilities.captures import StartFrom
from praisonai.compute.base import SYSTEM_PATH, SnapshotRef
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_HOME
from praisonai.compute.providers.docker._client import EngineCall, container_name
from praisonai.runtime.pool import ChannelPool

REPOSITORY = "praisonai-capture"
LABEL_CAPTURE = "praisonai.capture"
LABEL_CAPTURE_DEFINITION = "praisonai.capture.definition"
#: A snapshot's image (``_snapshot``) carries its id here; it inherits a capture's labels too.
LABEL_SNAPSHOT = "praisonai.snapshot"
# The helper's own files: they describe the build container's processes (and a bound env), not
# the definition.
_SPOOL_PARTS = tuple(f"/tmp/.praisonai/{part}" for part in ("x", "bg", "helper.pid", "env"))


def image_of(api: Any, tag: str) -> str | None:
    """The capture's image reference when it exists (and note that it was used), else None."""
    import docker

    ref = f"{REPOSITORY}:{tag}"
    try:
        api.inspect_image(ref)
    except docker.errors.ImageNotFound:
        return None
    _mark_used(tag)
    return ref


def commit(api: Any, container: str, tag: str, env: Mapping[str, str], definition: str) -> str:
    """Commit ``container`` as capture ``tag``, its spool emptied; return the image reference.

    Raises:
        ProvisionError: the spool could not be emptied, or the image would hold a value of ``env``
            (then it is removed): nothing is captured.
    """
    clean = api.exec_create(  # the instance's own command: the user's PATH must not matter
        container, ["rm", "-rf", "--", *_SPOOL_PARTS], environment={"PATH": SYSTEM_PATH}
    )["Id"]
    api.exec_start(clean)
    if api.exec_inspect(clean).get("ExitCode") != 0:  # the bound env may still be there
        raise ProvisionError("could not empty the helper's spool before the capture", op="capture")
    labels = {LABEL_CAPTURE: tag, LABEL_CAPTURE_DEFINITION: definition}
    ref = commit_image(api, container, REPOSITORY, tag, labels, env, op="capture")
    _mark_used(tag)
    return ref


def commit_image(
    api: Any,
    container: str,
    repository: str,
    tag: str,
    labels: Mapping[str, str],
    env: Mapping[str, str],
    *,
    op: str,
    pause: bool = True,
) -> str:
    """Commit ``container`` as ``repository:tag`` carrying ``labels``, with the image's own command
    back (the container's carries its main channel's nonce: ``_main``); return the reference.
    ``pause``: docker freezes the container while it commits (``False``: the caller froze it).

    Raises:
        ProvisionError: the image would hold a value of ``env`` (then it is removed).
    """
    changes = [f"LABEL {' '.join(f'{name}={value}' for name, value in labels.items())}"]
    image = api.inspect_image(api.inspect_container(container)["Image"])
    changes.append(f"CMD {json.dumps(image['Config'].get('Cmd') or [])}")
    api.commit(container, repository=repository, tag=tag, changes=changes, pause=pause)
    ref = f"{repository}:{tag}"
    leaked = _leaked_names(api, ref, env)
    if leaked:
        api.remove_image(ref, force=True)
        raise ProvisionError(
            f"the {op} would hold the value of {', '.join(leaked)} in its image; nothing was saved", op=op
        )
    return ref


def _leaked_names(api: Any, ref: str, env: Mapping[str, str]) -> list[str]:
    """The names of ``env`` whose non-empty values the image's configs or history carry."""
    image = api.inspect_image(ref)
    recorded = [
        *((image.get("Config") or {}).get("Env") or []),
        *((image.get("ContainerConfig") or {}).get("Env") or []),
    ]
    history = " ".join(f"{h.get('CreatedBy', '')} {h.get('Comment', '')}" for h in api.history(ref))
    return sorted(
        name
        for name, value in env.items()
        if value and (f"{name}={value}" in recorded or f"{name}={value}" in history)
    )


def listing(api: Any) -> list[CaptureInfo]:
    """This home's captures on the engine, most recently used first."""
    found = []
    for image in api.images(filters={"label": [LABEL_CAPTURE, f"{LABEL_HOME}={home_tag()}"]}):
        labels = image.get("Labels") or {}
        if LABEL_SNAPSHOT in labels:  # a snapshot of an instance started from a capture
            continue
        tag = labels.get(LABEL_CAPTURE, "")
        created = float(image.get("Created", 0))
        found.append(
            CaptureInfo(
                name=tag,
                provider="docker",
                image=f"{REPOSITORY}:{tag}",
                definition=labels.get(LABEL_CAPTURE_DEFINITION, ""),
                created_at=created,
                last_used=_last_used(tag, created),
                size_bytes=int(image.get("Size", 0)),
            )
        )
    return sorted(found, key=lambda c: c.last_used, reverse=True)


def prune(api: Any, *, older_than_s: float | None, keep: int | None, dry_run: bool) -> list[CaptureInfo]:
    """Remove captures unused for ``older_than_s`` seconds, and all but the ``keep`` most recently
    used. A capture an instance still runs from stays (the engine refuses); returns what went."""
    import docker

    check_prune(older_than_s, keep)
    now = time.time()
    doomed = [
        capture
        for index, capture in enumerate(listing(api))
        if (older_than_s is not None and now - capture.last_used > older_than_s)
        or (keep is not None and index >= keep)
    ]
    removed = []
    for capture in doomed:
        if not dry_run:
            try:
                api.remove_image(capture.image)
            except docker.errors.APIError:
                continue  # in use by a container: kept
            with contextlib.suppress(FileNotFoundError):
                (praisonai_home() / "captures" / capture.name).unlink()
        removed.append(capture)
    return removed


def check_prune(older_than_s: float | None, keep: int | None) -> None:
    """Refuse, with one sentence, what no age or count means: negative, NaN, infinite, not a number."""
    if older_than_s is not None and (
        isinstance(older_than_s, bool)
        or not isinstance(older_than_s, (int, float))
        or not math.isfinite(older_than_s)
        or older_than_s < 0
    ):
        raise ConfigError(
            f"older_than_s must be a finite number of seconds >= 0, not {older_than_s!r}", op="prune"
        )
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 0):
        raise ConfigError(f"keep must be a whole number >= 0, not {keep!r}", op="prune")


def _mark_used(tag: str) -> None:
    folder = praisonai_home() / "captures"
    folder.mkdir(exist_ok=True)
    (folder / tag).touch()


def _last_used(tag: str, created: float) -> float:
    try:
        return os.stat(praisonai_home() / "captures" / tag).st_mtime
    except FileNotFoundError:
        return created


class DockerCapturer:
    """A ``DockerEngine``'s captures (``abilities.captures.Capturer``): images committed from its
    containers, found by tag, listed and pruned by the functions above.

    Built from the engine's blocking ``call``, its client (``connect``), its channel pool, its
    ``bind_env`` and its ``start`` of a container from an image."""

    def __init__(
        self,
        call: EngineCall,
        connect: Callable[[], Any],
        channels: ChannelPool,
        bind_env: Callable[[str, Mapping[str, str]], Awaitable[None]],
        start: StartFrom,
    ) -> None:
        self._call, self._connect, self._channels = call, connect, channels
        self._bind_env, self._start = bind_env, start

    async def find(self, tag: str) -> SnapshotRef | None:
        image = await self._call(image_of, self._connect(), tag)
        return None if image is None else SnapshotRef("docker", image)

    async def save(self, instance_id: str, tag: str, cfg: ComputeConfig) -> SnapshotRef:
        self._channels.drop(instance_id)  # the helper's spool is emptied; a new one starts later
        name, definition = container_name(instance_id), cfg.definition_hash()
        own_env = cfg.split_env()[1]  # the defaults are in the container's config, and no secret
        image = await self._call(commit, self._connect(), name, tag, own_env, definition)
        if own_env:  # the emptied spool held it: this instance needs it still
            await self._bind_env(instance_id, own_env)
        return SnapshotRef("docker", image, created_at=time.time())

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot: SnapshotRef
    ) -> InstanceInfo:
        return await self._start(instance_id, cfg, labels, snapshot.ref)  # the capture's image tag

    async def captures(self) -> list[CaptureInfo]:
        return await self._call(listing, self._connect())

    async def prune(
        self, *, older_than_s: float | None = None, keep: int | None = None, dry_run: bool = False
    ) -> list[CaptureInfo]:
        check_prune(older_than_s, keep)  # before any engine call
        return await self._call(
            lambda: prune(self._connect(), older_than_s=older_than_s, keep=keep, dry_run=dry_run)
        )

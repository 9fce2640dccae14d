"""Docker snapshots: the running container committed to the image ``praisonai-snapshot:<id>``
(its layers shared with the image it runs), new instances started from that image as from a
capture's (``_capture.commit_image``, the engine's ``_start``).

Consistent: the container is frozen (``docker pause``, the cgroup freezer; gVisor's own pause under
runsc) for the commit, so every file is as its last finished write left it. Nothing of the helper's
spool (``/tmp/.praisonai``: the outputs of the commands the source ran, its background processes'
records, the bound env) is in a snapshot: under runc it is on a volume of its own, which a commit
never takes (``_spec.spool_volume``); under runsc, in gVisor's own memory (its ``/tmp``), where
docker never sees it. No env value: the instance's config keeps none (the provider binds env
through the helper), and where the spool's ``env`` file is in the container's writable layer after
all (under runsc from an image whose ``/tmp`` is not empty; a container made before the spool had a
volume), it is emptied while the container is frozen and written back before it thaws: no command
runs in between, and the committed layer holds an empty file. (It is written back as a new file: a
``bind_env`` frozen in the middle of its append, microseconds long, would finish into the old one
and be lost.) The image is then checked as a capture's is, against the values that file held. A
command that writes a secret into a file of its own leaves it in the snapshot, as any file.

A container's files are its image plus its own layer, fixed when it was made: an instance cannot
be rolled back in place, so ``restore`` refuses and ``fork(1)`` is the way. All blocking functions
run in worker threads through the engine's ``call``.
"""

from __future__ import annotations

import io
import shlex
import tarfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from praisonai._errors import ConfigError
from praisonai._ledger import home_tag
from praisonai._types import InstanceInfo
from praisonai.compute.abilities.captures import StartFrom
from praisonai.compute.abilities.snapshots import no_restore_in_place
from praisonai.compute.config import ComputeConfig
from praisonai.compute.lifecycle import LABEL_HOME, check_home
from praisonai.compute.providers.docker._capture import LABEL_SNAPSHOT, commit_image
from praisonai.compute.providers.docker._client import EngineCall, container_name

REPOSITORY = "praisonai-snapshot"


def image_of(snapshot_id: str) -> str:
    return f"{REPOSITORY}:{snapshot_id}"


def take(api: Any, container: str, inspected: dict[str, Any], snapshot_id: str, bound_env: str) -> int | None:
    """Commit ``container`` (as ``inspected``) as the snapshot, without the bound-env file
    ``bound_env`` (see the module docstring); return the size of the snapshot's own layer."""
    labels = {LABEL_SNAPSHOT: snapshot_id, LABEL_HOME: home_tag()}
    if _on_a_mount(inspected, bound_env):  # never in the commit: docker freezes it as it commits
        held = _read(api, container, bound_env)  # its values, for the image's check alone
        env = _values(held[1]) if held is not None else {}
        ref = commit_image(api, container, REPOSITORY, snapshot_id, labels, env, op="snapshot")
    else:
        ref = _commit_emptied(api, container, bound_env, labels, snapshot_id, inspected)
    layer = api.history(ref)[0].get("Size")  # the newest layer: what the commit added
    return int(layer) if isinstance(layer, int) else None


def _commit_emptied(
    api: Any,
    container: str,
    bound_env: str,
    labels: dict[str, str],
    snapshot_id: str,
    inspected: dict[str, Any],
) -> str:
    """Commit the container frozen, its bound-env file (in its layer) empty for the commit alone."""
    state = inspected.get("State") or {}
    running = bool(state.get("Running")) and not state.get("Paused")  # a paused one stays frozen
    if running:
        api.pause(container)
    try:
        held = _read(api, container, bound_env)
        if held is not None:
            _write(api, container, bound_env, held[0], b"")
        try:
            env = _values(held[1]) if held is not None else {}
            return commit_image(
                api, container, REPOSITORY, snapshot_id, labels, env, op="snapshot", pause=False
            )
        finally:
            if held is not None:
                _write(api, container, bound_env, held[0], held[1])
    finally:
        if running:
            api.unpause(container)


def _on_a_mount(inspected: dict[str, Any], path: str) -> bool:
    """Whether ``path`` is on one of the container's mounts (a volume's, a bind's, a tmpfs)."""
    places = [str(m.get("Destination", "")).rstrip("/") for m in inspected.get("Mounts") or []]
    return any(place and (path == place or path.startswith(place + "/")) for place in places)


def _read(api: Any, container: str, path: str) -> tuple[tarfile.TarInfo, bytes] | None:
    """The file's header and content, or ``None`` when the container's layers have no such file."""
    import docker

    try:
        stream, _stat = api.get_archive(container, path)
    except docker.errors.NotFound:
        return None
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
        member = archive.next()
        extracted = archive.extractfile(member) if member is not None else None
        return None if member is None or extracted is None else (member, extracted.read())


def _write(api: Any, container: str, path: str, header: tarfile.TarInfo, content: bytes) -> None:
    """Write ``content`` to the file, keeping its owner and mode (``header``)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        header.size = len(content)
        archive.addfile(header, io.BytesIO(content))
    api.put_archive(container, path.rsplit("/", 1)[0] or "/", buffer.getvalue())


def _values(text: bytes) -> dict[str, str]:
    """The ``NAME='value'`` assignments the helper keeps (``__p_env``), as names and values."""
    try:
        words = shlex.split(text.decode(errors="replace"))
    except ValueError:  # cut short: nothing to compare with
        return {}
    return dict(word.partition("=")[::2] for word in words if "=" in word)


def remove(api: Any, snapshot_id: str) -> bool:
    """Remove the snapshot's image; ``False`` when there was none.

    Raises:
        ConfigError: a container (an instance made from it) still uses it."""
    import docker

    try:
        api.remove_image(image_of(snapshot_id))
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.APIError as exc:
        if exc.status_code != 409:
            raise
        raise ConfigError(
            f"snapshot {snapshot_id} is in use by instances started from it; shut them down first",
            op="remove_snapshot",
        ) from None
    return True


def held(api: Any) -> list[str]:
    """The ids of this home's snapshot images on the engine."""
    images = api.images(filters={"label": [LABEL_SNAPSHOT, f"{LABEL_HOME}={home_tag()}"]})
    return sorted({(image.get("Labels") or {}).get(LABEL_SNAPSHOT, "") for image in images} - {""})


@dataclass(frozen=True)
class DockerSnapshotter:
    """``DockerCompute``'s snapshotter (``abilities.snapshots.Snapshotter``), from the engine's
    narrow parts: ``call`` runs a blocking docker-py call, ``connect`` gives the client,
    ``inspect`` reads a container (``InstanceNotFoundError`` when there is none), ``spool`` says
    where an instance's helper spools, ``start`` starts an instance from an image (the
    engine's ``_start``, as a capture's) and ``arm`` lets this process open a new instance's main
    channel (``_main.MainKeys.arm``, as the engine's ``provision`` does)."""

    call: EngineCall
    connect: Callable[[], Any]
    inspect: Callable[[str], Awaitable[dict[str, Any]]]
    spool: Callable[[str], str]
    start: StartFrom
    arm: Callable[[str], None]

    async def take(self, instance_id: str, snapshot_id: str) -> int | None:
        inspected = await self.inspect(instance_id)
        check_home(instance_id, (inspected.get("Config") or {}).get("Labels") or {}, "snapshot")
        bound_env = f"{self.spool(instance_id)}/env"
        container = container_name(instance_id)
        return await self.call(take, self.connect(), container, inspected, snapshot_id, bound_env)

    async def create_from(
        self, instance_id: str, cfg: ComputeConfig, labels: dict[str, str], snapshot_id: str
    ) -> InstanceInfo:
        info = await self.start(instance_id, cfg, labels, image_of(snapshot_id))
        self.arm(instance_id)  # made here, not by the engine's provision: its main channel is ours
        return info

    async def restore(self, instance_id: str, snapshot_id: str) -> InstanceInfo:
        raise no_restore_in_place(
            "docker",
            instance_id,
            snapshot_id,
            "a container's files are its image and its own layer, fixed when it was made",
        )

    async def remove(self, snapshot_id: str) -> bool:
        return await self.call(remove, self.connect(), snapshot_id)

    async def held(self) -> list[str]:
        return await self.call(held, self.connect())

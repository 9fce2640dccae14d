"""Where a paused Modal instance is kept while it has no sandbox: a Modal ``Dict`` named
``praisonai-paused`` (made on first use, in the provider's Modal environment), keyed by
``<app>/<instance id>``. Modal lists only running sandboxes, so this record is what lets any
process with the same Modal credentials see the instance as paused (``status``, ``list``, ``ps``,
``gc``), resume it, or remove it.

A record holds the snapshot image's id, the sandbox's tags (labels, working dir, idle timeout,
ports, settings: ``_spec``) and its env: a resume creates the sandbox again from them. The env
is kept there because Modal keeps a sandbox's env out of its snapshot; anyone with these
credentials could read it from the running sandbox as well.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from praisonai.compute.providers.modal import _sdk
from praisonai.compute.providers.modal._sdk import translated

STORE = "praisonai-paused"


@dataclass(frozen=True)
class Paused:
    """A paused instance: the image its files are in, and what its sandbox was made with."""

    instance_id: str
    app: str
    image_id: str
    tags: dict[str, str]
    env: dict[str, str]
    paused_at: float

    @property
    def key(self) -> str:
        return f"{self.app}/{self.instance_id}"


class PausedStore:
    """The records of one Modal app. The ``Dict`` handle is made once per store (the SDK looks
    the Dict up on its first use: one call)."""

    def __init__(self, app: str, environment: str | None) -> None:
        self.app, self._environment = app, environment
        self._dict: Any = None

    def _handle(self) -> Any:
        if self._dict is None:
            modal = _sdk.load()
            self._dict = modal.Dict.from_name(
                STORE, environment_name=self._environment, create_if_missing=True
            )
        return self._dict

    async def put(self, record: Paused) -> None:
        with translated("pause", record.instance_id):
            await self._handle().put.aio(record.key, asdict(record))

    async def get(self, instance_id: str) -> Paused | None:
        with translated("status", instance_id):
            value = await self._handle().get.aio(f"{self.app}/{instance_id}")
        return _record(value)

    async def pop(self, instance_id: str) -> Paused | None:
        """Remove the record (a no-op when there is none); the record it was, if any."""
        with translated("resume", instance_id):
            value = await self._handle().pop.aio(f"{self.app}/{instance_id}", None)
        return _record(value)

    async def every(self) -> list[Paused]:
        """Every paused instance of this app."""
        found = []
        with translated("list"):
            async for key, value in self._handle().items.aio():
                record = _record(value)
                if record is not None and key == record.key and record.app == self.app:
                    found.append(record)
        return found


def _record(value: Any) -> Paused | None:
    """A stored value as a record; anything else in the Dict (not ours) is ignored."""
    if not isinstance(value, dict):
        return None
    try:
        return Paused(**value)
    except TypeError:
        return None

"""Modal ``Dict``s in the fake, as the SDK's ``modal/dict.py`` calls them: named Dicts
(``DictGetOrCreate``, per environment, ``create_if_missing`` or NOT_FOUND) and their entries
(``DictUpdate`` with ``if_not_exists``, ``DictGet``, ``DictContains``, ``DictPop``,
``DictContents``). Keys and values are kept as the SDK's serialized bytes, compared as bytes
(the SDK pickles a key the same way each time). Not modelled: ephemeral Dicts, heartbeats,
``DictList``/``DictDelete``/``DictClear``/``DictLen``, size limits."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grpclib import GRPCError, Status
from grpclib.server import Stream
from modal_proto import api_pb2

from fakes.modal import _boxes

if TYPE_CHECKING:
    from fakes.modal._server import State


class DictMethods:
    """The Dict methods of the fake's ``ModalClient`` service (a base of ``_Control``)."""

    s: State

    async def _req(self, stream: Stream[Any, Any], name: str) -> Any:
        raise NotImplementedError

    def _entries(self, dict_id: str) -> dict[bytes, bytes]:
        if dict_id not in self.s.dicts:
            raise GRPCError(Status.NOT_FOUND, f"Dict {dict_id} not found")
        return self.s.dicts[dict_id]

    async def DictGetOrCreate(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "DictGetOrCreate")
        name = (req.environment_name or "main", req.deployment_name)
        if name not in self.s.dict_names:
            if req.object_creation_type != api_pb2.OBJECT_CREATION_TYPE_CREATE_IF_MISSING:
                raise GRPCError(Status.NOT_FOUND, f"Dict {req.deployment_name!r} not found")
            self.s.dict_names[name] = dict_id = _boxes.new_id("di")
            self.s.dicts[dict_id] = {}
        dict_id = self.s.dict_names[name]
        meta = api_pb2.DictMetadata(name=req.deployment_name)
        await stream.send_message(api_pb2.DictGetOrCreateResponse(dict_id=dict_id, metadata=meta))

    async def DictUpdate(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "DictUpdate")
        entries = self._entries(req.dict_id)
        created = False
        for update in req.updates:
            if req.if_not_exists and update.key in entries:
                continue
            created = created or update.key not in entries
            entries[update.key] = update.value
        await stream.send_message(api_pb2.DictUpdateResponse(created=created))

    async def DictGet(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "DictGet")
        value = self._entries(req.dict_id).get(req.key)
        found = value is not None
        await stream.send_message(api_pb2.DictGetResponse(found=found, value=value or b""))

    async def DictContains(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "DictContains")
        found = req.key in self._entries(req.dict_id)
        await stream.send_message(api_pb2.DictContainsResponse(found=found))

    async def DictPop(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "DictPop")
        value = self._entries(req.dict_id).pop(req.key, None)
        found = value is not None
        await stream.send_message(api_pb2.DictPopResponse(found=found, value=value or b""))

    async def DictContents(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "DictContents")
        for key, value in list(self._entries(req.dict_id).items()):
            entry = api_pb2.DictEntry(key=key if req.keys else b"", value=value if req.values else b"")
            await stream.send_message(entry)

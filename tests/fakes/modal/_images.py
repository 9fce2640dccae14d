"""Modal images in the fake, as the SDK calls them: ``ImageGetOrCreate`` (only
``Image.from_registry(tag)`` of a local image: the fake builds none), ``ImageFromId`` and
``ImageDelete`` (``modal.experimental.image_delete``). A snapshot's image (``TaskSnapshotFilesystem``,
in ``_server``) is a committed docker image."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grpclib import GRPCError, Status
from grpclib.server import Stream
from modal_proto import api_pb2

from fakes import docker
from fakes.modal import _boxes

if TYPE_CHECKING:
    from fakes.modal._server import State

# google.protobuf's Empty as the generated module holds it (its stubs are not a dependency)
_EMPTY: Any = vars(api_pb2)["google_dot_protobuf_dot_empty__pb2"].Empty


class ImageMethods:
    """The image methods of the fake's ``ModalClient`` service (a base of ``_Control``)."""

    s: State

    async def _req(self, stream: Stream[Any, Any], name: str) -> Any:
        raise NotImplementedError

    async def ImageGetOrCreate(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "ImageGetOrCreate")
        cmds = [c for c in req.image.dockerfile_commands if c.strip()]
        if len(cmds) != 1 or not cmds[0].startswith("FROM "):
            raise GRPCError(
                Status.FAILED_PRECONDITION,
                "the Modal fake builds no images: use Image.from_registry(tag) of a local image",
            )
        image_id = _boxes.new_id("im")
        self.s.images[image_id] = cmds[0].split()[1]
        ok = api_pb2.GenericResult(status=api_pb2.GenericResult.GENERIC_STATUS_SUCCESS)
        await stream.send_message(api_pb2.ImageGetOrCreateResponse(image_id=image_id, result=ok))

    async def ImageFromId(self, stream: Stream[Any, Any]) -> None:
        req = await self._req(stream, "ImageFromId")
        if req.image_id not in self.s.images:
            raise GRPCError(Status.NOT_FOUND, f"Image {req.image_id} not found")
        await stream.send_message(api_pb2.ImageFromIdResponse(image_id=req.image_id))

    async def ImageDelete(self, stream: Stream[Any, Any]) -> None:
        """``modal.experimental.image_delete``: the image can no longer be used (NOT_FOUND for
        ``ImageFromId`` and creates); sandboxes running from it run on, as on Modal, so its
        docker image goes once nothing runs from it (or when the fake stops)."""
        req = await self._req(stream, "ImageDelete")
        if req.image_id not in self.s.images:
            raise GRPCError(Status.NOT_FOUND, f"Image {req.image_id} not found")
        ref = self.s.images.pop(req.image_id)
        if ref.startswith(_boxes.SNAPSHOT_REPOSITORY):
            rc, _, _ = await docker.docker_async("rmi", ref)
            if rc:  # a sandbox's container still uses it
                self.s.deleted_images.append(ref)
        await stream.send_message(_EMPTY())

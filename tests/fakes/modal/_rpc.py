"""gRPC service helpers for the Modal fake: unmodelled methods answer UNIMPLEMENTED by name, and
every call is counted."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grpclib import GRPCError, Status
from grpclib.const import Handler
from grpclib.server import Stream

if TYPE_CHECKING:
    from fakes.modal._server import State


def with_defaults(base: type, impl: type) -> type:
    """``impl`` with every abstract method it lacks answering UNIMPLEMENTED."""

    def make(name: str) -> Any:
        async def unimplemented(self: Any, stream: Stream[Any, Any]) -> None:
            await stream.recv_message()
            raise GRPCError(Status.UNIMPLEMENTED, f"the Modal fake does not model {name}")

        return unimplemented

    abstract: frozenset[str] = getattr(base, "__abstractmethods__", frozenset())
    # a method of impl or of a mixin before base in its MRO is implemented; base's is abstract
    missing = {n: make(n) for n in abstract if getattr(getattr(impl, n), "__isabstractmethod__", False)}
    return type(impl.__name__, (impl,), missing)


class Counted:
    """A service whose every call is counted in ``state.calls`` by method name (what a call costs
    on a real network is a round trip: the benchmark and the tests count them)."""

    def __init__(self, service: Any, state: State) -> None:
        self._service, self._state = service, state

    def __mapping__(self) -> dict[str, Handler]:
        def counted(name: str, func: Any) -> Any:
            async def call(stream: Stream[Any, Any]) -> None:
                self._state.calls[name] = self._state.calls.get(name, 0) + 1
                await func(stream)

            return call

        mapping: dict[str, Handler] = self._service.__mapping__()
        return {
            path: handler._replace(func=counted(path.rsplit("/", 1)[-1], handler.func))
            for path, handler in mapping.items()
        }

"""A terminal into an instance over a websocket: the page's xterm.js on one side, the instance's
PTY (``open_pty``, the path ``praisonai compute shell`` takes) on the other.

The socket carries typed keys in and output out as binary frames; a text frame from the page is a
new size (``{"cols": C, "rows": R}``), one from the server says how it ended (``{"exit": N}`` or
``{"error": "sentence"}``). The PTY lives on praisonai's portal loop, like every instance the
library holds; closing the socket (the tab, a reload, the server stopping) closes it, which kills
every process it started.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from starlette.routing import BaseRoute, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from praisonai._errors import PraisonAIError
from praisonai._limits import PTY_DEFAULT_COLS, PTY_DEFAULT_ROWS
from praisonai._portal import on_portal
from praisonai.compute import inventory
from praisonai.compute.abilities.pty import Pty, pty_size


async def _terminal(socket: WebSocket) -> None:
    await socket.accept()
    instance_id = socket.path_params["instance_id"]
    try:
        pty = await _open(instance_id, socket.query_params.get("cols"), socket.query_params.get("rows"))
    except PraisonAIError as exc:
        await socket.send_text(json.dumps({"error": str(exc)}))
        await socket.close()
        return
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_output, socket, pty, tasks.cancel_scope)
            await _input(socket, pty)
            tasks.cancel_scope.cancel()  # the page left: nobody reads the output
    finally:
        with anyio.CancelScope(shield=True):
            await on_portal(pty.close)


async def _open(instance_id: str, cols: str | None, rows: str | None) -> Pty:
    """The instance's PTY, a shell at the page's size (one sentence when it cannot be had)."""
    find = inventory.provider_of
    provider = await anyio.to_thread.run_sync(find, instance_id, "open a terminal in", "open_pty")
    width, height = pty_size(_number(cols, PTY_DEFAULT_COLS), _number(rows, PTY_DEFAULT_ROWS))

    async def opening() -> Pty:
        return await provider.open_pty(instance_id, cols=width, rows=height, env={"TERM": "xterm-256color"})

    return await on_portal(opening)


async def _output(socket: WebSocket, pty: Pty, done: anyio.CancelScope) -> None:
    """The PTY's output to the page; at its end, its exit code, then the socket closes."""
    while chunk := await on_portal(pty.read):
        await socket.send_bytes(chunk)
    try:
        ended: dict[str, Any] = {"exit": await on_portal(pty.wait)}
    except PraisonAIError as exc:
        ended = {"error": str(exc)}
    await socket.send_text(json.dumps(ended))
    await socket.close()
    done.cancel()


async def _input(socket: WebSocket, pty: Pty) -> None:
    """The page's keys and sizes to the PTY, in order, until the page goes away."""
    try:
        while True:
            message = await socket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("bytes"):
                await on_portal(pty.write, message["bytes"])
            elif message.get("text"):
                await _resize(pty, message["text"])
    except WebSocketDisconnect:
        return


async def _resize(pty: Pty, text: str) -> None:
    """A size the page sent; a malformed one is ignored (the terminal keeps its size)."""
    try:
        wanted = json.loads(text)
        cols, rows = pty_size(wanted["cols"], wanted["rows"])
    except (ValueError, TypeError, KeyError):
        return
    await on_portal(pty.resize, cols, rows)


def _number(text: str | None, default: int) -> object:
    if text is None:
        return default
    return int(text) if text.isdigit() else text  # pty_size refuses what is not a number


ROUTES: list[BaseRoute] = [WebSocketRoute("/ws/instances/{instance_id}/terminal", _terminal)]

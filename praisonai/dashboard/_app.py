"""The dashboard's ASGI app: the page, its static files and each feature's routes, behind the guard.

The page is static (``static/``: plain ES modules, no build step); it talks to the JSON, event
stream and websocket routes that each feature module lists in its ``ROUTES``. Every route reads the
library, as the CLI does, so nothing shown here is computed twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from importlib.resources import files

import anyio
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from praisonai import __version__
from praisonai._errors import PraisonAIError
from praisonai._home import home_path
from praisonai.dashboard import _files, _instances, _sessions, _snapshots, _terminal
from praisonai.dashboard._guard import Access, Guard


def create_app(access: Access) -> Starlette:
    """The app, answering only what ``access`` lets through."""
    page = (files("praisonai.dashboard") / "static" / "index.html").read_text()  # no secret in it

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(page)

    routes: list[BaseRoute] = [
        Route("/", index),
        Route("/api/about", _about),
        Mount("/static", StaticFiles(packages=[("praisonai.dashboard", "static")]), name="static"),
        *_instances.ROUTES,
        *_sessions.ROUTES,
        *_terminal.ROUTES,
        *_files.ROUTES,
        *_snapshots.ROUTES,
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, access=access)],
        exception_handlers={PraisonAIError: _refused},
        lifespan=_lifespan,
    )


#: The status of a library error in a route's answer, by the builtin it also is.
_STATUS = ((ValueError, 400), (LookupError, 404), (FileNotFoundError, 404), (PermissionError, 403))


async def _refused(request: Request, exc: Exception) -> PlainTextResponse:
    """A library error is the page's one sentence (as it is the CLI's), not a server error."""
    status = next((code for kind, code in _STATUS if isinstance(exc, kind)), 409)
    return PlainTextResponse(str(exc), status_code=status)


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    """What the app shares across requests, made in its loop and stopped with it."""
    app.state.survey = _instances.Survey()
    app.state.turns = _sessions.Turns()
    try:
        yield
    finally:
        await app.state.survey.close()
        await anyio.to_thread.run_sync(app.state.turns.stop)


async def _about(request: Request) -> JSONResponse:
    """What the page's header shows: the version and the home whose state it reads."""
    return JSONResponse({"version": __version__, "home": str(home_path())})

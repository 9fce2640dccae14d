"""What praisonai tells an operator: log lines on the ``praisonai`` logger and OpenTelemetry spans.

Logging: every module logs on a child of the ``praisonai`` logger (``praisonai.lifecycle``,
``praisonai.retry``, …): INFO for what changes an instance (provisioned, reattached, shut down,
captured) and for retries, DEBUG for each vendor call (:func:`vendor_call`). Nothing is shown
unless the application configures logging, or the CLI's ``-v`` (INFO) / ``-vv`` (DEBUG) or
``PRAISONAI_LOG`` do (:func:`configure`).

Spans: :func:`span` opens an OpenTelemetry span (``praisonai.provision``, ``praisonai.exec``,
``praisonai.upload``, ``praisonai.download``, ``praisonai.model``) with the instance and session
ids as attributes, once the application uses OpenTelemetry (``opentelemetry.trace`` imported: it
sets its tracer provider so; the ``otel`` extra installs the API); otherwise it does nothing, at
the cost of one dict lookup, and never imports OpenTelemetry itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

#: Set to ``debug``, ``info`` or ``warning``: the level of the CLI's log lines on stderr.
LOG_VARIABLE = "PRAISONAI_LOG"
_VERBOSITY = {1: logging.INFO, 2: logging.DEBUG}
_tracer: list[Any] = []  # the tracer, once the application traces


def logger(name: str) -> logging.Logger:
    """The ``praisonai.<name>`` logger."""
    return logging.getLogger(f"praisonai.{name}")


def vendor_call(vendor: str, op: str, what: object = "") -> None:
    """One DEBUG line for a call to a vendor's API or SDK (``-vv``), on ``praisonai.<vendor>``."""
    logger(vendor).debug("%s call: %s %s", vendor, op, what or "")


def configure(verbosity: int = 0) -> None:
    """Show the ``praisonai`` log lines on stderr: INFO with ``verbosity`` 1, DEBUG with 2, else
    the level ``PRAISONAI_LOG`` names (nothing when neither says). For the CLI; a library's
    application configures logging itself."""
    named = os.environ.get(LOG_VARIABLE, "").strip().upper()
    level = {1: logging.INFO, 2: logging.DEBUG}.get(min(verbosity, 2)) or logging.getLevelName(
        named or "NOTSET"
    )
    if not isinstance(level, int) or level == logging.NOTSET:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("praisonai")
    root.addHandler(handler)
    root.setLevel(level)


@contextlib.contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None, *, current: bool = True) -> Iterator[Any]:
    """An OpenTelemetry span ``praisonai.<name>`` around the block (the span, or ``None`` when
    the application does not trace). An exception leaving the block is recorded on it and raised
    as it is. ``current=False`` for a block that yields inside an async generator: the span is
    not made the context's current one, which a generator could not restore where it resumes."""
    tracer = _get_tracer()
    if tracer is None:
        yield None
        return
    clean = {k: _attribute(v) for k, v in (attributes or {}).items() if v is not None}
    if current:
        with tracer.start_as_current_span(f"praisonai.{name}", attributes=clean) as opened:
            yield opened
        return
    opened = tracer.start_span(f"praisonai.{name}", attributes=clean)
    try:
        yield opened
    except BaseException as exc:
        opened.record_exception(exc)
        raise
    finally:
        opened.end()


def event(name: str, attributes: Mapping[str, Any] | None = None) -> None:
    """An OpenTelemetry event on the current span (a managed session's event, say), when the
    application traces; values that are not scalars are given as text."""
    if _get_tracer() is None:
        return
    from opentelemetry import trace

    shown = {k: _attribute(v) for k, v in (attributes or {}).items() if v is not None}
    trace.get_current_span().add_event(name, attributes=shown)


def _attribute(value: Any) -> Any:
    return value if isinstance(value, str | bool | int | float) else str(value)


def _get_tracer() -> Any:
    if not _tracer:
        trace = sys.modules.get("opentelemetry.trace")
        if trace is None:  # the application does not trace (yet): no span, no import
            return None
        _tracer.append(trace.get_tracer("praisonai"))
    return _tracer[0]

"""The helper channel on E2B: one long-lived envd process per helper or session shell.

The process is started with ``commands.run(cmd, background=True, stdin=True, timeout=0)`` of the
SDK's sync flavour (a transport blocks and has a reader thread: see ``runtime/transport.py``);
each request goes in with ``send_stdin`` (one envd call), and replies come back on the process's
output stream, which the reader thread follows with ``handle.wait(on_stdout=…, on_stderr=…)``.

Why the channel is safe although the SDK's output is not binary-safe. The SDK hands a process's
output over as text decoded from UTF-8 with ``errors="replace"``
(``e2b/sandbox_sync/commands/command_handle.py``), so bytes that are not UTF-8 come back changed.
That is harmless here because on E2B nothing binary is ever asked of the helper:

- its framing is ASCII (nonces, status words, ``D <id> <code> <flags>`` notices) and is found by
  search, never by length, so a replaced byte in a body cannot desync it; the decoder is
  incremental, so a sequence split between chunks arrives whole, and the ASCII nonce after a
  broken sequence arrives intact;
- what the helper sends as raw bytes is kept off this stream on E2B: exec is native
  (``_exec.run``, its output spooled nowhere), files go through envd's files API with
  ``format="bytes"``, and background-process output is read from its spool file through that API
  too (``_processes``); ``__p_ps`` lines are ASCII JSON;
- a session's output is text by contract: ``SessionResult`` decodes it as UTF-8 with
  replacement on every provider, so the text is the same (only the byte count in a truncation
  marker can differ, as a replaced byte is re-encoded as three).

Input is binary-safe: ``send_stdin`` carries bytes in a protobuf field. tests/providers/test_e2b.py
guards this with non-UTF-8 output from a background process and from a session.
"""

from __future__ import annotations

import logging
import shlex
import threading
from collections.abc import Callable
from typing import Any

from praisonai.compute.providers.e2b._errors import translated
from praisonai.runtime.transport import Receiver, Transport

log = logging.getLogger("praisonai.e2b")


class E2BTransport(Transport):
    """``argv`` running in an E2B sandbox (a sync ``e2b.Sandbox``), stdin and output attached.

    ``on_send`` runs before each write (the provider renews the sandbox's deadline from it)."""

    def __init__(self, sandbox: Any, argv: list[str], on_send: Callable[[], None]) -> None:
        with translated("exec"):
            # E2B runs it as `/bin/bash -l -c <cmd>`; 0: the stream has no deadline (the SDK's
            # default would end it after 60 s).
            self._handle = sandbox.commands.run(
                shlex.join(argv), background=True, stdin=True, timeout=0, retain_output=False
            )
        self._on_send = on_send
        self._ended = threading.Event()
        self._code: int | None = None
        self._closed = False
        self._lock = threading.Lock()  # one send at a time: envd gets the chunks in order

    def _pump(self, on_stdout: Receiver, on_stderr: Receiver) -> None:
        import e2b

        try:
            result = self._handle.wait(
                on_stdout=lambda text: on_stdout(text.encode()),
                on_stderr=lambda text: on_stderr(text.encode()),
            )
            self._code = result.exit_code
        except e2b.CommandExitException as exc:  # a non-zero exit: the SDK raises it
            self._code = exc.exit_code if exc.exit_code >= 0 else 128 + 9  # -1: killed by a signal
        except (e2b.SandboxException, OSError) as exc:  # the sandbox is gone or the link broke
            log.debug("the e2b process stream ended: %r", exc)
        except Exception:  # anything else ends the stream too, but is worth seeing
            log.exception("the e2b process stream failed")
        finally:
            self._ended.set()

    def send(self, data: bytes) -> None:
        import e2b

        if self._closed or self._ended.is_set():
            raise BrokenPipeError("the e2b process's stdin is closed")
        self._on_send()
        with self._lock:
            try:
                self._handle.send_stdin(data)
            except (e2b.SandboxException, e2b.AuthenticationException, OSError) as exc:
                raise BrokenPipeError(f"the e2b process did not take its input: {exc}") from exc

    def alive(self) -> bool:
        """Whether its output stream is still open: asking envd costs a call, and the stream ends
        with the process. As the fake models envd, it ends once the process has exited and its
        pipes are closed, so a process whose pipes a child still holds counts as alive until
        that child ends; on E2B nothing the helper starts keeps its pipes (exec is native;
        background processes and kill sweeps have theirs redirected), and a session command's
        children end with the command's process group when it is interrupted or times out."""
        return not self._ended.is_set()

    def exit_code(self) -> int | None:
        return self._code if self._ended.is_set() else None

    def close(self) -> None:
        """EOF on stdin, which ends the helper and a session shell (from a thread of its own: it
        is an envd call, and ``Channel.close`` runs on the event loop)."""
        if self._closed:
            return
        self._closed = True
        if not self._ended.is_set():
            threading.Thread(target=self._close_stdin, name="praisonai-e2b-close", daemon=True).start()

    def _close_stdin(self) -> None:
        import e2b

        try:
            with self._lock:
                self._handle.close_stdin()
        except (e2b.SandboxException, e2b.AuthenticationException, OSError):
            pass  # gone already: so is its stdin

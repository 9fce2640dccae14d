"""Agent: instructions, a model, Python-callable tools and a bounded tool loop."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import anyio.to_thread

from praisonai import _portal
from praisonai._errors import ConfigError
from praisonai.agents._backend import AgentBackend, stream_turn
from praisonai.agents._tools_instance import ToolsInstance
from praisonai.llm.client import make_client
from praisonai.llm.tools import ToolSpec, call_tool, tool_name, tool_spec
from praisonai.llm.types import (
    AssistantMessage,
    Completion,
    LLMClient,
    Message,
    ModelSpec,
    ToolResult,
    Usage,
    UserMessage,
    resolve_model,
)

T = TypeVar("T")


class Agent:
    """A model with instructions and tools, run as a bounded tool loop.

    Attributes (plain and mutable; other layers, such as SharedCompute, rely on them):
        name: the agent's name.
        instructions: what the agent is told to do; built from name/role/goal when not given.
        role, goal, backstory: PraisonAI's way to describe the agent. ``backstory`` follows the
            instructions in the system prompt (:attr:`system_prompt`), read at each call: that is
            where SharedCompute appends its note, as on PraisonAI's agents.
        tools: Python callables; a tool's name is its ``__name__``. The loop reads this list afresh
            at each ``start``/``chat``, so replacing items changes what the model sees.
        backend: None, or an object that runs this agent's turns (see below).
        tools_run_on: None, or the place (a provider name or object) its tools run on (see below).
        history: the conversation so far (user, assistant and tool messages).
        usage: tokens spent by every run so far (a frozen :class:`Usage`, replaced after each call).
        max_iter: at most this many model calls per ``start``/``chat``.

    ``start(prompt)`` begins a fresh conversation; ``chat(prompt)`` continues the one kept on the
    agent. Both return the model's final text; ``stream(prompt)`` is ``chat`` as an iterator of
    text pieces (one piece: the final text, unless a backend streams). The sync forms run on
    praisonai's one portal loop (they work from plain threads and from inside a running event
    loop); the async forms run the loop and the tools on the caller's event loop.

    The agent makes one SDK client, on first use, and keeps it: it lives on the portal loop (async
    callers reach it through a worker thread), so it outlives any one caller's event loop. ``close()``
    / ``aclose()`` (or ``with``/``async with``) release its connections; a later call makes a new one;
    interpreter exit closes what is still open.

    ``tools_run_on="docker"`` (PraisonAI's parameter; any provider name or object): the agent gets
    ``execute_command``, ``read_file``, ``write_file``, ``list_files``, ``edit_file``, ``grep`` and
    ``glob`` on an instance of its own, made on the first tool call (once, however many calls come
    at once) and kept across turns, so files persist; ``close()`` removes it, as does interpreter
    exit. A team or flow with a ``compute`` leaves such an agent on its own place.

    ``backend=obj`` (PraisonAI's managed backend, e.g. ``ManagedAgent``): ``start``/``chat`` and
    their async forms return ``await obj.execute(prompt)``, and ``stream`` yields
    ``obj.stream_text(prompt)`` (see :class:`~praisonai.agents.agent.AgentBackend`); the model, tools and
    loop here are not used. Each turn is recorded in ``history``; ``start`` does not clear it, since
    the backend's conversation goes on.
    """

    def __init__(
        self,
        name: str,
        instructions: str | None = None,
        *,
        role: str | None = None,
        goal: str | None = None,
        backstory: str | None = None,
        model: str = "gpt-4o-mini",
        tools: list[Callable[..., Any]] | None = None,
        max_iter: int = 10,
        base_url: str | None = None,
        api_key: str | None = None,
        backend: AgentBackend | None = None,
        tools_run_on: object = None,
    ) -> None:
        if max_iter < 1:
            raise ValueError(f"max_iter must be at least 1, got {max_iter}")
        if backend is not None and tools_run_on is not None:
            raise ConfigError(
                "give an Agent backend= or tools_run_on=, not both: a backend runs its own tools", op="agent"
            )
        self.name = name
        self.instructions = instructions or _instructions(name, role, goal, has_backstory=bool(backstory))
        self.role, self.goal, self.backstory = role, goal, backstory
        self.model = model
        self.tools: list[Callable[..., Any]] = list(tools or [])
        self.max_iter = max_iter
        self.backend = backend
        self.tools_run_on = tools_run_on
        self.usage = Usage()
        self.history: list[Message] = []
        self._spec: ModelSpec = resolve_model(model, base_url=base_url, api_key=api_key)
        self._client: LLMClient | None = None
        self._lock = threading.Lock()
        self._tools_instance = ToolsInstance(tools_run_on) if tools_run_on is not None else None

    @property
    def system_prompt(self) -> str:
        """What the model is told at each call: :attr:`instructions`, then :attr:`backstory` when
        there is one (PraisonAI's agents lead their prompt with it, so that is where SharedCompute
        puts its note)."""
        return "\n\n".join(part for part in (self.instructions, self.backstory) if part)

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, model={self.model!r}, tools={[tool_name(t) for t in self.tools]})"

    @property
    def chat_history(self) -> list[dict[str, str]]:
        """PraisonAI's view of :attr:`history`: its user and assistant messages as ``{"role",
        "content"}`` dicts (tool calls and results left out). A copy; assigning such a list
        replaces the conversation (``agent.chat_history = []`` forgets it)."""
        roles = {UserMessage: "user", AssistantMessage: "assistant"}
        return [
            {"role": roles[type(m)], "content": m.text}
            for m in self.history
            if isinstance(m, UserMessage | AssistantMessage) and m.text
        ]

    @chat_history.setter
    def chat_history(self, messages: Sequence[Mapping[str, str]]) -> None:
        kinds = {"user": UserMessage, "assistant": AssistantMessage}
        bad = [m for m in messages if m.get("role") not in kinds or not isinstance(m.get("content"), str)]
        if bad:
            raise ValueError(
                f"chat_history takes {{'role': 'user' or 'assistant', 'content': text}} dicts, not {bad[0]!r}"
            )
        self.history = [kinds[m["role"]](m["content"]) for m in messages]

    def start(self, prompt: str, *, stream: bool = False) -> str:
        """Answer ``prompt`` in a fresh conversation (blocking); returns the final text.
        ``stream=True`` (PraisonAI's): the text is also written to stdout as it comes (see
        :meth:`chat`)."""
        if stream:
            if self.backend is None:
                self.history = []
            return _echo(self.stream(prompt))
        return _portal.call(self.astart, prompt)

    def chat(self, prompt: str, *, stream: bool = False) -> str:
        """Answer ``prompt`` continuing this agent's conversation (blocking). ``stream=True``
        (PraisonAI's): the text is also written to stdout as it comes — a backend's piece by
        piece, else the final text at once — then a newline; the full text is returned all the same."""
        if stream:
            return _echo(self.stream(prompt))
        return _portal.call(self.achat, prompt)

    def stream(self, prompt: str) -> Generator[str, None, None]:
        """:meth:`chat` as text pieces: the backend's as they come, else (no backend, or one with
        only ``execute``, as PraisonAI's protocol allows) the final text once."""
        backend = self.backend
        if backend is None or not callable(getattr(backend, "stream_text", None)):
            yield self.chat(prompt)
            return
        yield from stream_turn(backend, prompt, lambda text: self._record(prompt, text))

    async def astart(self, prompt: str) -> str:
        """Async :meth:`start`."""
        if self.backend is None:
            self.history = []
        return await self.achat(prompt)

    async def achat(self, prompt: str) -> str:
        """Async :meth:`chat`: the bounded tool loop.

        At most ``max_iter`` model calls. Tool errors go back to the model as ``"Error: ..."`` text.
        When the bound is reached with tool calls still pending, those calls are not run and the
        last text the model wrote is returned (or a note saying the loop stopped).
        """
        if self.backend is not None:
            return self._record(prompt, await self.backend.execute(prompt))
        if (
            self._tools_instance is not None and not self._tools_instance.attached
        ):  # its tools before they are read
            await anyio.to_thread.run_sync(self._tools_instance.attach, self)
        messages = [*self.history, UserMessage(prompt)]
        tools = {tool_name(t): t for t in self.tools}
        specs = [tool_spec(t) for t in tools.values()]
        text = ""
        for turn in range(1, self.max_iter + 1):
            completion = await self._complete(messages, specs)
            self.usage = self.usage + completion.usage
            messages.append(AssistantMessage(completion.text, completion.tool_calls))
            text = completion.text or text
            if not completion.tool_calls:
                self.history = messages
                return completion.text
            if turn == self.max_iter:
                break
            for call in completion.tool_calls:
                messages.append(ToolResult(call.id, call.name, await call_tool(tools, call)))
        self.history = _without_dangling_calls(messages)
        return text or f"(stopped after max_iter={self.max_iter} model calls without a final answer)"

    def close(self) -> None:
        """Close the SDK client's connections and remove the ``tools_run_on`` instance (blocking).
        Idempotent; the agent stays usable."""
        try:
            _portal.call(self._aclose_client)
        finally:
            if self._tools_instance is not None:
                self._tools_instance.close()

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        try:
            await _portal.on_portal(self._aclose_client)
        finally:
            if self._tools_instance is not None:
                await anyio.to_thread.run_sync(self._tools_instance.close)

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _record(self, prompt: str, text: str) -> str:
        self.history = [*self.history, UserMessage(prompt), AssistantMessage(text)]
        return text

    async def _complete(self, messages: Sequence[Message], specs: Sequence[ToolSpec]) -> Completion:
        with self._lock:
            if self._client is None:
                self._client = make_client(self._spec)
                _portal.close_at_exit(self)
            client = self._client
        return await _portal.on_portal(client.complete, self.system_prompt, messages, specs)

    async def _aclose_client(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        _portal.forget_at_exit(self)
        if client is not None:
            await client.aclose()


def _echo(pieces: Iterable[str]) -> str:
    """Write ``pieces`` to stdout as they come, then a newline, as PraisonAI's streaming start does;
    returns them joined."""
    text = []
    for piece in pieces:
        sys.stdout.write(piece)
        sys.stdout.flush()
        text.append(piece)
    sys.stdout.write("\n")
    sys.stdout.flush()
    return "".join(text)


def _instructions(name: str, role: str | None, goal: str | None, *, has_backstory: bool) -> str:
    """Instructions made of name, role and goal (the backstory follows them in the system prompt)."""
    parts = [f"You are {name}" + (f", {role}." if role else ".")]
    if goal:
        parts.append(f"Your goal: {goal}")
    if not (role or goal or has_backstory):
        parts.append("You are a helpful assistant.")
    return " ".join(parts)


def _without_dangling_calls(messages: list[Message]) -> list[Message]:
    """The transcript minus a trailing assistant turn whose tool calls were never answered."""
    last = messages[-1]
    if isinstance(last, AssistantMessage) and last.tool_calls:
        return messages[:-1]
    return messages

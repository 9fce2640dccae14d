"""``ClassOnly``: a static method that may be called on its class only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class ClassOnly(Generic[P, R]):
    """``Sandbox.run``: called on the class, it makes its own instance. Reached through a sandbox
    (``sandbox.run(...)``, as other SDKs spell a command in *that* sandbox) it would run somewhere
    the caller did not mean, so there it raises, naming the method that runs in that sandbox."""

    def __init__(self, method: Callable[P, R]) -> None:  # a staticmethod (callable since 3.10)
        self._method = method

    def __get__(self, sandbox: object, owner: type) -> Callable[P, R]:
        if sandbox is not None:
            raise AttributeError(
                f"{owner.__name__}.run runs a command in a fresh instance of its own; "
                "to run one in this sandbox, call its exec(command)"
            )
        return self._method

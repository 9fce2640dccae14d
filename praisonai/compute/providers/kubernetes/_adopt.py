"""Creating an object whose answer may be lost, and adopting it when it was ours.

Every object we create is named after the instance id (``_pod.pod_name``), so a create that is
retried after its answer was lost (a timeout, a dropped connection, a 5xx from a proxy after the
API server had acted) meets our own first create as ``409 AlreadyExists``. The object is then read
back: carrying our provider label and this instance's id, it is adopted; anything else is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubernetes.client import ApiException

from praisonai import _retry
from praisonai._errors import ConfigError, ProviderUnavailableError
from praisonai.compute.lifecycle import LABEL_INSTANCE, LABEL_PROVIDER
from praisonai.compute.providers.kubernetes._api import WriteLimiter, read_call, write_call

#: Creates tried in all when the answer is lost (the first, then retries).
ATTEMPTS = 3

Meta = tuple[Mapping[str, str], Mapping[str, str]]  # (labels, annotations)


def already_exists(exc: BaseException) -> bool:
    """Whether ``exc`` (a translated error) is the API server's 409 ``AlreadyExists``."""
    cause = exc.__cause__
    return isinstance(cause, ApiException) and cause.status == 409


def owned(meta: Meta, instance_id: str, provider: str) -> bool:
    """Whether an object's labels and annotations show it is ``instance_id``'s, made by us."""
    labels, annotations = meta
    mine = annotations.get(LABEL_INSTANCE) or labels.get(LABEL_INSTANCE)
    return labels.get(LABEL_PROVIDER) == provider and mine == instance_id


def meta_of(obj: Any) -> Meta:
    """(labels, annotations) of a client model (``V1Pod`` …) or of a custom object's dict."""
    meta = obj["metadata"] if isinstance(obj, dict) else obj.metadata
    if isinstance(meta, dict):
        return dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})
    return dict(meta.labels or {}), dict(meta.annotations or {})


async def create_or_adopt(
    what: str,
    instance_id: str,
    provider: str,
    create: Callable[[], Awaitable[Any]],
    read: Callable[[], Awaitable[Any]],
) -> Any:
    """``create()``'s object; after a lost answer, the one our earlier attempt made (``read()``).

    A 5xx or an unreachable API server is retried with backoff (``praisonai._retry``; at most
    ``ATTEMPTS`` creates in all); a 409
    is answered by reading the object and adopting it when it is ours, refusing it otherwise."""

    async def attempt() -> Any:
        try:
            return await create()
        except ConfigError as exc:
            if not already_exists(exc):
                raise
            found = await read()
            if owned(meta_of(found), instance_id, provider):
                return found
            raise ConfigError(
                f"{what} already exists in the cluster and is not instance {instance_id}'s; "
                "something else uses that name",
                op="provision",
            ) from exc

    return await _retry.retried(attempt, retry_if=_unavailable, attempts=ATTEMPTS, what=f"creating {what}")


async def create_or_adopt_calls(
    writes: WriteLimiter, what: str, instance_id: str, provider: str, create: Any, read: Any
) -> Any:
    """:func:`create_or_adopt` of the blocking API calls ``create`` (a write, after the rate limit
    ``writes``) and ``read``."""
    return await create_or_adopt(
        what,
        instance_id,
        provider,
        lambda: write_call(writes, "provision", what, create),
        lambda: read_call("provision", what, read),
    )


def _unavailable(exc: BaseException) -> bool:
    """A 5xx or an unreachable API server: the create may be tried again (it adopts its own)."""
    return isinstance(exc, ProviderUnavailableError)

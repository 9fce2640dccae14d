"""E2B's exceptions as praisonai's, at the boundary: one sentence each, ``raise … from exc``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from praisonai import _telemetry
from praisonai._errors import (
    AuthenticationError,
    ExecError,
    InstanceNotFoundError,
    PathNotFoundError,
    ProviderUnavailableError,
)

KEY_VARIABLE = "E2B_API_KEY"
MISSING_KEY = f"the e2b provider needs an API key: set {KEY_VARIABLE} (from https://e2b.dev/dashboard)"


@contextlib.contextmanager
def translated(op: str, instance_id: str = "", path: str = "") -> Iterator[None]:
    """Run an SDK call, turning E2B's exceptions into ours (``op`` names the operation)."""
    import e2b
    import httpx  # the SDK's transport: an unreachable E2B surfaces as its errors, not E2B's

    _telemetry.vendor_call("e2b", op, instance_id or path)
    try:
        yield
    except e2b.AuthenticationException as exc:
        raise AuthenticationError(f"E2B refused the API key ({exc}); check {KEY_VARIABLE}", op=op) from exc
    except e2b.RateLimitException as exc:
        raise ProviderUnavailableError(f"E2B is rate limiting this key; retry later ({exc})", op=op) from exc
    except e2b.ServiceBusyException as exc:
        raise ProviderUnavailableError(f"E2B has no capacity now; retry later ({exc})", op=op) from exc
    except e2b.FileNotFoundException as exc:
        raise PathNotFoundError(f"no such file in the instance: {path}", op=op) from exc
    except (e2b.SandboxNotFoundException, e2b.SandboxNotRunningException) as exc:
        raise InstanceNotFoundError(f"no e2b instance {instance_id!r} (gone or expired)", op=op) from exc
    except e2b.NotEnoughSpaceException as exc:
        raise ExecError(f"the e2b instance {instance_id} is out of disk space", op=op) from exc
    except httpx.TransportError as exc:
        raise ProviderUnavailableError(
            f"E2B could not be reached ({exc}); check the network and E2B_DOMAIN, or retry later", op=op
        ) from exc
    except e2b.SandboxException as exc:
        if getattr(exc, "status_code", None) == 404:
            raise InstanceNotFoundError(f"no e2b instance {instance_id!r}", op=op) from exc
        raise ExecError(f"E2B failed during {op}: {exc}", op=op) from exc

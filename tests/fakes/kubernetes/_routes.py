"""The Kubernetes fake's routes: discovery, pods, services, network policies, claims, storage
classes and volume snapshots, watch and exec."""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from fakes._ws import WebSocket, offered
from fakes.kubernetes import _agent_sandbox, _exec, _net, _portforward, _snapshots, _tty, _volumes

if TYPE_CHECKING:
    from fakes.kubernetes import KubernetesFake

Query = dict[str, list[str]]
_REASONS = {
    400: "BadRequest",
    404: "NotFound",
    409: "AlreadyExists",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
}
_NET = ["apis", "networking.k8s.io", "v1"]


def route(fake: KubernetesFake, h: BaseHTTPRequestHandler, path: list[str], query: Query) -> None:
    """Dispatch ``h``'s request (its path split on ``/``), faults first."""
    length = int(h.headers.get("Content-Length") or 0)
    raw = h.rfile.read(length) if length else b""
    with fake.cond:
        fake.requests.append((h.command, "/" + "/".join(path)))
        streaming = path[-1:] in (["exec"], ["portforward"])
        if h.command in ("POST", "DELETE") and not streaming:
            fake.write_times.append(time.monotonic())
        fault = fake.faults.pop(0) if fake.faults and not streaming else None
    if fault is not None:
        return _status(h, fault, _REASONS.get(fault, "Unknown"), "injected fault")
    if path[-1:] == ["exec"] and len(path) == 7:
        return _exec_route(fake, h, path[3], path[5], query)
    if path[-1:] == ["portforward"] and len(path) == 7:
        return _portforward_route(fake, h, path[3], path[5], query)
    if query.get("watch", ["0"])[0] in ("1", "true"):
        return _watch(fake, h, path, query)
    body: Any = json.loads(raw) if raw.strip() else None
    code, answer = _dispatch(fake, h.command, path, query, body)
    with fake.cond:
        lost = fake.lost_answers.pop(0) if fake.lost_answers and h.command == "POST" else None
    if lost == 0:  # done, but the connection drops before the answer
        h.close_connection = True
        with contextlib.suppress(OSError):
            h.connection.shutdown(socket.SHUT_RDWR)
        return None
    if lost is not None:  # done, but a proxy in between answers an error
        return _status(h, lost, _REASONS.get(lost, "Unknown"), "injected fault after the write")
    if code >= 400:
        reason, message = answer
        return _status(h, code, reason, message)
    _send(h, code, answer)


def _dispatch(fake: KubernetesFake, method: str, path: list[str], query: Query, body: Any) -> tuple[int, Any]:
    if method == "GET" and path in (["version"], ["api"], ["apis"], ["api", "v1"], _NET, _volumes.STORAGE):
        return 200, _discovery(fake, path)
    if method == "GET" and path[:4] == [*_volumes.STORAGE, "storageclasses"] and len(path) <= 5:
        return _volumes.storage_classes(fake, path[4] if len(path) == 5 else None)
    if path[:3] == _snapshots.API:
        answer = _snapshots.route(fake, method, path, body)
        return answer or (200, _list(fake, _snapshots.store(fake), path[4], query, "VolumeSnapshotList"))
    if path[:2] in (["apis", g] for g in _agent_sandbox.GROUPS):
        return _agent_sandbox_api(fake, method, path, query, body)
    ns = path[3] if len(path) > 3 and path[2] == "namespaces" else ""
    if path == ["api", "v1", "pods"] and method == "GET":
        return 200, _list(fake, fake.pods, None, query, "PodList")
    if path[:3] == ["api", "v1", "namespaces"] and len(path) >= 5 and path[4] == "pods":
        return _pods(fake, method, ns, path[5] if len(path) == 6 else None, query, body)
    if path[:3] == ["api", "v1", "namespaces"] and len(path) >= 5 and path[4] == "services":
        if len(path) == 5 and method == "GET":
            return 200, _list(fake, fake.services, ns, query, "ServiceList")
        return _net.services(fake, method, ns, path[5] if len(path) == 6 else None, body)
    if path[:3] == ["api", "v1", "namespaces"] and len(path) >= 5 and path[4] == "persistentvolumeclaims":
        return _claims(fake, method, ns, path[5] if len(path) == 6 else None, query, body)
    if path[:4] == [*_NET, "namespaces"] and len(path) >= 6 and path[5] == "networkpolicies":
        return _policies(fake, method, path[4], path[6] if len(path) == 7 else None, query, body)
    return 404, ("NotFound", "the server could not find the requested resource")


def _agent_sandbox_api(
    fake: KubernetesFake, method: str, path: list[str], query: Query, body: Any
) -> tuple[int, Any]:
    """The agent-sandbox groups: 404 as a whole without the CRDs installed."""
    group = path[1]
    if not fake.agent_sandbox:
        return 404, ("NotFound", "the server could not find the requested resource")
    if method == "GET" and path == ["apis", group, _agent_sandbox.VERSION]:
        return 200, _agent_sandbox.discovery(group)
    if method == "GET" and path == ["apis", group]:
        version = {"groupVersion": f"{group}/{_agent_sandbox.VERSION}", "version": _agent_sandbox.VERSION}
        return 200, {"kind": "APIGroup", "name": group, "versions": [version], "preferredVersion": version}
    if (
        len(path) in (6, 7)
        and path[2] == _agent_sandbox.VERSION
        and path[3] == "namespaces"
        and path[5] in _agent_sandbox.GROUPS[group]
    ):
        if len(path) == 6 and method == "GET":
            store = {(ns, n): o for (p, ns, n), o in fake.custom.items() if p == path[5]}
            return 200, _list(fake, store, path[4], query, _agent_sandbox.KINDS[path[5]] + "List")
        return _agent_sandbox.objects(
            fake, method, path[5], path[4], path[6] if len(path) == 7 else None, body
        )
    return 404, ("NotFound", "the server could not find the requested resource")


def _pods(
    fake: KubernetesFake, method: str, ns: str, name: str | None, query: Query, body: Any
) -> tuple[int, Any]:
    if name is None and method == "GET":
        return 200, _list(fake, fake.pods, ns, query, "PodList")
    if name is None and method == "POST":
        code, pod = fake.create_pod(ns, dict(body or {}))
        return code, pod
    if name is not None and method == "GET":
        with fake.cond:
            pod = fake.pods.get((ns, name))
            return (200, _view(pod)) if pod else (404, ("NotFound", f'pods "{name}" not found'))
    if name is not None and method == "DELETE":
        return fake.delete_pod(ns, name)
    return 405, ("MethodNotAllowed", f"{method} is not supported here")


def _claims(
    fake: KubernetesFake, method: str, ns: str, name: str | None, query: Query, body: Any
) -> tuple[int, Any]:
    if name is None and method == "GET":
        return 200, _list(fake, fake.claims, ns, query, "PersistentVolumeClaimList")
    if name is None and method == "POST":
        return _volumes.create_claim(fake, ns, dict(body or {}))
    if name is not None and method == "GET":
        with fake.cond:
            claim = fake.claims.get((ns, name))
            found = (200, _view(claim)) if claim else None
        return found or (404, ("NotFound", f'persistentvolumeclaims "{name}" not found'))
    if name is not None and method == "DELETE":
        return _volumes.delete_claim(fake, ns, name)
    return 405, ("MethodNotAllowed", f"{method} is not supported here")


def _policies(
    fake: KubernetesFake, method: str, ns: str, name: str | None, query: Query, body: Any
) -> tuple[int, Any]:
    with fake.cond:
        if name is None and method == "GET":
            return 200, _list(fake, fake.policies, ns, query, "NetworkPolicyList")
        if name is None and method == "POST":
            policy = dict(body or {})
            key = (ns, str(policy.get("metadata", {}).get("name")))
            if key in fake.policies:
                return 409, ("AlreadyExists", f'networkpolicies.networking.k8s.io "{key[1]}" already exists')
            policy["metadata"] = {**policy.get("metadata", {}), "namespace": ns, "resourceVersion": "1"}
            fake.policies[key] = policy
            return 201, policy
        found = fake.policies.get((ns, str(name)))
        if found is None:
            return 404, ("NotFound", f'networkpolicies.networking.k8s.io "{name}" not found')
        if method == "DELETE":
            del fake.policies[(ns, str(name))]
        return 200, found


def _list(
    fake: KubernetesFake, items: dict[Any, Any], ns: str | None, query: Query, kind: str
) -> dict[str, Any]:
    with fake.cond:
        found = [_view(o) for (n, _), o in items.items() if (ns is None or n == ns) and _matches(o, query)]
        version = str(fake.version)
    return {"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": version}, "items": found}


def _matches(obj: dict[str, Any], query: Query) -> bool:
    """``labelSelector`` (equality and existence terms) and ``fieldSelector`` on the name."""
    labels = obj["metadata"].get("labels") or {}
    for term in filter(None, ",".join(query.get("labelSelector", [])).split(",")):
        if "!=" in term:
            key, value = term.split("!=", 1)
            ok = labels.get(key.strip()) != value.strip()
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            ok = labels.get(key.strip()) == value.strip()
        elif term.startswith("!"):
            ok = term[1:].strip() not in labels
        else:
            ok = term.strip() in labels
        if not ok:
            return False
    for term in filter(None, ",".join(query.get("fieldSelector", [])).split(",")):
        key, _, value = term.replace("==", "=").partition("=")
        if key == "metadata.name" and obj["metadata"].get("name") != value:
            return False
    return True


def _watch(fake: KubernetesFake, h: BaseHTTPRequestHandler, path: list[str], query: Query) -> None:
    """A chunked stream of ``{"type", "object"}`` lines: the current matches, then changes."""
    kind, ns, current = _watched(fake, path)
    deadline = time.monotonic() + float(query.get("timeoutSeconds", ["60"])[0])
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    with fake.cond:
        seen = fake.version
        lines = [("ADDED", _view(o)) for o in current if _matches(o, query)]
    try:
        while True:
            for change, obj in lines:
                data = json.dumps({"type": change, "object": obj}).encode() + b"\n"
                h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            h.wfile.flush()
            left = deadline - time.monotonic()
            if left <= 0:
                break
            with fake.cond:
                fake.cond.wait_for(functools.partial(_newer, fake, seen), timeout=min(left, 1.0))
                new = [e for e in fake.events if e[0] > seen]
                seen = fake.version
                lines = [
                    (change, _view(o))
                    for _, change, o in new
                    if (o.get("kind") or "Pod") == kind
                    and ns in (None, o["metadata"]["namespace"])
                    and _matches(o, query)
                ]
        h.wfile.write(b"0\r\n\r\n")
    except OSError:
        pass  # the watcher hung up
    h.close_connection = True


def _watched(fake: KubernetesFake, path: list[str]) -> tuple[str, str | None, list[dict[str, Any]]]:
    """What a watch on ``path`` follows: (kind, namespace or None, the current objects)."""
    if path[0] == "apis" and len(path) == 6:  # an agent-sandbox resource
        kind = _agent_sandbox.KINDS.get(path[5], "")
        with fake.cond:
            return (
                kind,
                path[4],
                [o for (p, ns, _), o in fake.custom.items() if p == path[5] and ns == path[4]],
            )
    ns = path[3] if len(path) > 3 and path[2] == "namespaces" else None
    with fake.cond:
        return "Pod", ns, [p for (n, _), p in fake.pods.items() if ns in (None, n)]


def _newer(fake: KubernetesFake, seen: int) -> bool:
    return fake.version > seen


def _running_container(
    fake: KubernetesFake, h: BaseHTTPRequestHandler, ns: str, name: str
) -> tuple[str, str] | None:
    """The pod's container and uid when it runs; else the API server's refusal is answered."""
    with fake.cond:
        pod = fake.pods.get((ns, name))
        container = pod.get("_container") if pod else None
        running = pod is not None and pod["status"]["phase"] == "Running"
    if pod is None:
        _status(h, 404, "NotFound", f'pods "{name}" not found')
        return None
    if not running or container is None:
        phase = pod["status"]["phase"]
        _status(h, 400, "BadRequest", f"unable to upgrade connection: pod is not running ({phase})")
        return None
    return str(container), str(pod["metadata"].get("uid", name))


def _portforward_route(
    fake: KubernetesFake, h: BaseHTTPRequestHandler, ns: str, name: str, query: Query
) -> None:
    if not fake.port_forwarding:
        return _status(h, 403, "Forbidden", f'cannot create resource "pods/portforward" in "{ns}"')
    found = _running_container(fake, h, ns, name)
    if found is None:
        return None
    if why := _portforward.refused_reason(query):
        return _status(h, 400, "BadRequest", why)
    protocol = next((p for p in offered(h) if p in _portforward.PROTOCOLS), None)
    if protocol is None or (h.headers.get("Upgrade") or "").lower() != "websocket":
        return _status(h, 400, "BadRequest", "upgrade to WebSocket with v4.channel.k8s.io")
    _portforward.serve(WebSocket(h, protocol), found[0], found[1], int(query["ports"][0]), fake.exec_log)


def _exec_route(fake: KubernetesFake, h: BaseHTTPRequestHandler, ns: str, name: str, query: Query) -> None:
    found = _running_container(fake, h, ns, name)
    if found is None:
        return None
    container = found[0]
    protocol = next((p for p in offered(h) if p in fake.protocols), None)
    if protocol is None or (h.headers.get("Upgrade") or "").lower() != "websocket":
        return _status(h, 400, "BadRequest", "upgrade to WebSocket with a channel.k8s.io subprotocol")
    ws = WebSocket(h, protocol)
    stdin = query.get("stdin", ["false"])[0].lower() in ("1", "true")
    if query.get("tty", ["false"])[0].lower() in ("1", "true"):
        return _tty.serve_tty(ws, container, query.get("command", []), fake.exec_log)
    _exec.serve(ws, container, query.get("command", []), stdin, fake.exec_log)


def _view(obj: dict[str, Any] | None) -> dict[str, Any]:
    """The object as the API shows it: without the fake's own ``_`` keys (a deep enough copy)."""
    assert obj is not None
    shown: dict[str, Any] = json.loads(json.dumps({k: v for k, v in obj.items() if not k.startswith("_")}))
    return shown


def _discovery(fake: KubernetesFake, path: list[str]) -> dict[str, Any]:
    if path == ["version"]:
        return {
            "major": "1",
            "minor": "32",
            "gitVersion": "v1.32.0-praisonai-fake",
            "platform": "linux/amd64",
        }
    if path == ["api"]:
        where = [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": where}
    if path == ["apis"]:
        groups = []
        for name in ("networking.k8s.io", "storage.k8s.io", *[_snapshots.GROUP] * fake.volume_snapshots):
            version = {"groupVersion": f"{name}/v1", "version": "v1"}
            groups.append({"name": name, "versions": [version], "preferredVersion": version})
        for name in _agent_sandbox.GROUPS if fake.agent_sandbox else ():
            version = {"groupVersion": f"{name}/{_agent_sandbox.VERSION}", "version": _agent_sandbox.VERSION}
            groups.append({"name": name, "versions": [version], "preferredVersion": version})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    if path == ["api", "v1"]:
        verbs = ["create", "delete", "get", "list", "watch"]
        pods = {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod", "verbs": verbs}
        exec_ = {"name": "pods/exec", "singularName": "", "namespaced": True, "kind": "PodExecOptions"}
        claims = {
            "name": "persistentvolumeclaims",
            "singularName": "persistentvolumeclaim",
            "namespaced": True,
        }
        claims |= {
            "kind": "PersistentVolumeClaim",
            "verbs": ["create", "delete", "get", "list"],
            "shortNames": ["pvc"],
        }
        services = {"name": "services", "singularName": "service", "namespaced": True, "kind": "Service"}
        services |= {"verbs": ["create", "delete", "get", "list"], "shortNames": ["svc"]}
        resources = [{**pods, "shortNames": ["po"]}, {**exec_, "verbs": ["create", "get"]}, claims, services]
        return {"kind": "APIResourceList", "groupVersion": "v1", "resources": resources}
    if path == _volumes.STORAGE:
        classes = {"name": "storageclasses", "singularName": "storageclass", "namespaced": False}
        classes |= {"kind": "StorageClass", "verbs": ["get", "list"], "shortNames": ["sc"]}
        return {"kind": "APIResourceList", "groupVersion": "storage.k8s.io/v1", "resources": [classes]}
    resources = [
        {
            "name": "networkpolicies",
            "singularName": "networkpolicy",
            "namespaced": True,
            "kind": "NetworkPolicy",
            "verbs": ["create", "delete", "get", "list"],
        }
    ]
    return {"kind": "APIResourceList", "groupVersion": "networking.k8s.io/v1", "resources": resources}


def _status(h: BaseHTTPRequestHandler, code: int, reason: str, message: str) -> None:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    _send(h, code, body)


def _send(h: BaseHTTPRequestHandler, code: int, answer: Any) -> None:
    data = json.dumps(_view(answer) if isinstance(answer, dict) else answer).encode()
    h.send_response(code)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)

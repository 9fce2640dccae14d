"""Running agents' tools remotely: one instance shared by a team (SharedCompute)."""

from praisonai.managed.shared import CAPABILITY_NOTE, AuditEntry, SharedCompute

__all__ = ["CAPABILITY_NOTE", "AuditEntry", "SharedCompute"]

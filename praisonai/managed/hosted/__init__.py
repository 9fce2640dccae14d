"""The hosted backend: a ManagedAgent whose loop runs on Anthropic's Claude Managed Agents API
(``ManagedAgent(provider="anthropic")``), with the same sessions store, events and CLI as the
local backend.

- :mod:`._client`: the SDK client, and how the API's failures read to a user.
- :mod:`._resources`: the remote agent and environment, made once per config (reused by hash,
  under a lock, reconciled after a lost answer) and recorded in the store.
- :mod:`._turn`: one turn: stream first, send, persist every event, answer confirmations and
  custom tools, reconnect and reconcile, usage, interrupt.
- :mod:`._worker`: a ``self_hosted`` environment: the agent toolset runs on our compute.
- :mod:`.admin`: the key's remote agents, environments and sessions as a user manages them
  (``praisonai managed agents|envs|sessions``), and :func:`.admin.call` for sync code.

Only this package imports ``anthropic`` for Managed Agents (the import-linter rule says so).
"""

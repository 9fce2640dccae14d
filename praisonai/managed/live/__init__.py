"""A session being driven, whichever backend drives it: :class:`._session.LiveSession` (its lease,
its instance, its events as they are stored), the transcript as model messages
(:mod:`._history`), and how a turn ends (:mod:`._result`: ``ManagedResult``, ``ToolRequest``)."""

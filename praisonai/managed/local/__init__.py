"""The local backend: the managed loop run here (:mod:`._turn`), the model streaming and the
tools running on the session's instance."""

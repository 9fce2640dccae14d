"""A managed session's instance: where it comes from and how it is found again
(:mod:`._source`), and the tools a model runs on it (:mod:`._tools`: bash, read, write, edit,
glob, grep; :mod:`._search` builds glob and grep; :mod:`._answers` says what every instance
tool answers the model, the shared instance's tools too)."""

"""The command groups, in a module of their own: both the entry point (``__init__``, for the
top-level help it answers without typer) and the app (``_app``) read them, and neither imports the
other's module for it."""

#: What praisonai does, in one line. The providers are not listed here: the top-level help is
#: answered before any entry point is read; ``compute providers`` lists the registered ones.
SUMMARY = (
    "Run AI agents' shell and file tools in isolated instances ('praisonai compute providers' lists where)."
)

#: The command groups: name -> (module, one line for the top-level help). A module with a
#: ``command`` is a group of one, that command (``praisonai dashboard``); the others have an ``app``.
GROUPS = {
    "sandbox": (
        "praisonai.cli.sandbox",
        "Run commands in instances, as docker does: run, create, exec, cp, rm, shell, snapshot, fork, ...",
    ),
    "compute": (
        "praisonai.cli.compute",
        "Providers, their instances and snapshots: providers, ps, stop, gc, snapshots, warm.",
    ),
    "managed": ("praisonai.cli.managed", "Agent turns and their sessions: run, sessions, agents, ps, stop."),
    "env": ("praisonai.cli.env", "The file .praisonai/environment.yaml: validate, show, plan, build."),
    "dashboard": ("praisonai.cli.dashboard", "A local web console: instances, sessions, terminals, files."),
}

#: The commands whose exit status is their instance command's, as ``docker run``'s is: their own
#: failures (and usage mistakes) exit with :data:`OWN_FAILURE`, which no command of theirs can be
#: mistaken for; a command the instance cannot run exits 126, one it cannot find 127 (the shell's
#: codes, passed through).
RUNNERS = frozenset({("sandbox", "run"), ("sandbox", "exec"), ("sandbox", "shell"), ("compute", "shell")})
OWN_FAILURE = 125
#: Their status when the reader of their output went away (``| head``) and the instance command
#: was stopped before its end: 128 + SIGPIPE, as a shell reports a command a closed pipe ended.
CUT_OFF = 141

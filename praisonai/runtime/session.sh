# shellcheck shell=sh
# praisonai session: POSIX sh. Frames the replies of a session shell (session_shell.sh).
# Started as:  sh -c "<this file>" praisonai-session SHELL CWD ENV-FILE [LAUNCHER...]
# where SHELL is session_shell.sh's text. With a LAUNCHER (an argv prefix: docker's starts the
# shell as the commands' uid, not dumpable), the shell runs as `LAUNCHER... /bin/sh -c SHELL`;
# without one, in a subshell of this one.
# The first line on stdin is the session's secret; the rest is the shell's.
# Framing no output can forge: after the hello and after each command, "<secret>:<n> <status>\n"
# follows on stdout and "<secret>:<n>\n" on stderr, n counting from 0 (the hello's status is
# this process's pid, the session's process group; a command's is its exit code, with " exit"
# when the shell is ending). A writer process of this one's prints these lines, one for each
# line the shell sends it on its fd 9. The secret lives only in this process and its writer,
# read here before the shell starts: with a LAUNCHER, it is never in the shell's memory, env,
# argv or fds, and the writer and this process run as a user the shell's cannot signal, trace
# or read.
__p_src=$1 __p_cwd=$2 __p_env=$3
shift 3
trap : INT
IFS= read -r __p_k || exit 70
__p_writer() {  # stdin: one status line per reply
  trap '' INT
  __p_i=0
  while IFS= read -r __p_s; do
    printf '%s:%s %s\n' "$__p_k" "$__p_i" "$__p_s"
    printf '%s:%s\n' "$__p_k" "$__p_i" >&2
    __p_i=$((__p_i + 1))
  done
}
__p_pid=$$
exec 3>&1
{
  trap : INT
  (  # its exit status, whatever traps the commands set, is reported
    unset __p_k
    if [ "$#" -gt 0 ]; then
      exec "$@" /bin/sh -c "$__p_src" praisonai-session-shell "$__p_cwd" "$__p_env" "$__p_pid"
    fi
    set -- "$__p_cwd" "$__p_env" "$__p_pid"
    eval "$__p_src"
  ) 3>&-
  printf '%s exit\n' "$?" >&9
} 9>&1 1>&3 3>&- | __p_writer 3>&-

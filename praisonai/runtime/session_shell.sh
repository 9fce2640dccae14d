# shellcheck shell=sh
# praisonai session shell: POSIX sh, started by session.sh (see there) as
#   sh -c "<this file>" praisonai-session-shell CWD ENV-FILE PID [REQUESTS-FD]
# where PID is session.sh's (its process group, which a timeout or an interrupt signals), and
# the requests come on REQUESTS-FD (stdin without it; docker's relay gives fd 8).
# Commands run in this shell itself, so the working directory, variables and functions persist
# between them, as in a terminal. Each request on stdin is an empty line (it ends any input sent
# as the last command ended, which runs as nothing) and "__p_run <marker> '<command>'", the
# marker naming the command's processes (see below). The command's output goes straight to
# stdout/stderr; its stdin is this shell's (input sent while it runs reaches it).
# fd 9 goes to session.sh's writer, which frames the replies: first PID once the shell is ready,
# then each command's exit status. This shell never holds the writer's secret.
# Activity (see helper.sh; ENV-FILE lives in the helper's spool): each command creates
# SPOOL/alive (and wakes a sleeping watchdog: SPOOL/.asleep, .wake), and SPOOL/busy/PID is
# non-empty while a command runs. Builtins only.
trap '' INT
__p_a='' __p_b='' __p_in=${4:-0}
[ -z "$2" ] || __p_a=${2%/*}/alive __p_b=${2%/*}/busy/$3 __p_q=${2%/*}/.asleep __p_w=${2%/*}/.wake
cd -- "$1" || exit 70
# shellcheck source=/dev/null # the env file is written at run time (see helper.sh)
if [ -n "$2" ] && [ -r "$2" ]; then set -a; . "$2"; set +a; fi  # env bound after provisioning
printf '%s\n' "$3" >&9
# Each request runs here, with builtins and syntax that a command's own functions, aliases and
# options (set -e, a function named printf, unset -f) cannot take over; the only function,
# __p_cmd, is defined afresh for every command.
# shellcheck disable=SC2154 # __p_line is set by `command read`, __p_c by eval: shellcheck sees neither
while IFS= command read -r __p_line <&"$__p_in"; do  # until the client closes the session
  case $__p_line in
  "__p_run "*) ;;
  *) continue ;;  # input sent as its command ended reached no command: it runs as none
  esac
  __p_line=${__p_line#__p_run }
  # Each command's processes carry a marker of their own, as an exec's do, chosen by the
  # client (16 characters of [0-9A-Za-z_]): its timeout kills every process carrying it, and
  # the docker watchdog can end a fork bomb started here.
  export PRAISONAI_EXEC_ID="${__p_line%% *}"
  eval "__p_c=${__p_line#* }"  # the command, unquoted
  case $__p_b in  # a command runs (a failed write is no error, even under set -e)
  ?*)
    { command true >"$__p_a" && command printf 1 >"$__p_b"; } 2>/dev/null || :
    ! command test -s "$__p_q" || { command printf '\n' 1<>"$__p_w"; } 2>/dev/null || :
    ;;
  esac
  __p_cmd() {  # `return` in the command returns from here; `command`: a syntax error fails it
    command eval "$__p_c"
  }
  __p_r=0
  trap : INT  # an interrupt stops the command, not the shell (its children get the default)
  # shellcheck disable=SC2043 # a loop of one pass on purpose (see its comment)
  for __p_once in 1; do  # a `break` or `continue` in the command ends this loop, not ours
    __p_cmd 9>&- 8<&-  # closed while the command runs (their saved copies are close-on-exec)
    __p_r=$?
  done
  trap '' INT  # between commands: an interrupt that arrives late must not cut the next read
  case $__p_b in  # it has ended
  ?*) { command true >"$__p_b"; } 2>/dev/null || : ;;
  esac
  command printf '%s\n' "$__p_r" >&9
done

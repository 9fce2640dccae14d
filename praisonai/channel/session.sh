# praisonai session shell: POSIX sh. Commands run in this shell itself, so the working
# directory, variables and functions persist between them, as in a terminal.
# Started as:  sh -c "<this file>" praisonai-session CWD NONCE [ENV-FILE]
# Request: one line "__p_run <nonce> '<command>'". The command's output goes straight to
# stdout/stderr and its stdin is this shell's (input sent while it runs reaches it). Then
# "<nonce> <exit-code>\n" follows on stdout and "<nonce>\n" on stderr; an `exit` reports too.
# Activity (see helper.sh; ENV-FILE lives in the helper's spool): each command creates
# SPOOL/alive, and SPOOL/busy/<this shell's pid> is non-empty while a command runs. Builtins only.
__p_nl='
'
__p_n=
__p_a= __p_b=
[ -z "$3" ] || __p_a=${3%/*}/alive __p_b=${3%/*}/busy/$$
__p_mark() {  # 1: a command runs; empty: none. `printf 2>/dev/null >f`: a failure is no exit
  [ -z "$__p_b" ] || { true 2>/dev/null >"$__p_a"; printf '%s' "$1" 2>/dev/null >"$__p_b"; }
}
__p_done() {  # exit-code [exit]: "exit" tells the client this shell is ending
  __p_mark ''
  printf '%s %s %s\n' "$__p_n" "$1" "$2"
  printf '%s\n' "$__p_n" >&2
  __p_n=
}
__p_run() {
  __p_n=$1
  __p_mark 1
  command eval "$2"  # `command`: a syntax error fails the command, not the session
  __p_done $?
}
trap '__p_r=$?; [ -z "$__p_n" ] || __p_done "$__p_r" exit' EXIT
trap : INT  # an interrupt stops the running command, not the session (children get the default)
cd -- "$1" || exit 70
if [ -n "$3" ] && [ -r "$3" ]; then set -a; . "$3"; set +a; fi  # env bound after provisioning
__p_n=$2
__p_done $$
while IFS= read -r __p_line; do eval "$__p_line"; done

# shellcheck shell=sh
# praisonai exec helper: POSIX sh only (plus head, tail, cat, wc, rm, mkdir, mv, grep and readlink).
# Started once per instance and client as:  sh -c "<this file>" praisonai-helper SPOOL NONCE
# or, the nonce then coming first on stdin, off every command line: SPOOL - attached [UID:GID]
# (docker's main channel, with the secret its waiter says this helper's end with: see the end of
# this file; and every docker helper whose commands run as UID:GID)
# With UID:GID (docker) everything of the user's runs as that uid, apart from the helper (root):
# see helper_files.sh.
#
# Requests arrive on stdin, one line of shell code each, calling a function below with
# arguments the client has quoted; __p_write is followed by exactly SIZE raw bytes.
# Every request gets one reply on stdout: optional body bytes, then "<nonce> <status>\n".
# Finished jobs are announced on stderr as single short lines (atomic pipe writes), each after a
# newline of its own that ends whatever a command left unended there (/proc/<pid>/fd/2), so that
# the notice is never glued to it:
#   D <id> <exit-code> <flags> <secret>
#        flags: 1 = stdout not empty, 2 = stderr not empty, 4 = the spool is full or was deleted
#        (output may be lost); summed. A word for the code says why the job could not start (nocwd),
#        or, "killed", that a sweep stopped it when its helper's input ended (it may have run).
#        secret: the job's own, sent with its request; commands never see it (not in their env,
#        argv or files, and unset in the subshell that runs them), so a line a command writes to
#        our stderr (/proc/<pid>/fd/2) cannot end its call or another's: the client drops it.
# Exec output is spooled under SPOOL/x, background processes under SPOOL/bg/<id>, so output is
# never interleaved on the channel and a background process can be found again by id.
# Activity, for an instance that stops itself when idle (docker's watchdog.sh), costs no fork:
# SPOOL/alive is emptied (created) per request read, and while the watchdog waits for a deadline
# (SPOOL/.asleep not empty) a line written to its FIFO SPOOL/.wake wakes it (opened read-write:
# never blocks, even with no reader; a regular file if the spool was deleted), and SPOOL/x/<id>.p holds "<command pid> <helper pid>
# <pid namespace>" while an exec runs (busy while both live: a job whose helper died no longer
# counts), and once it ends a second line "done <exit-code> <flags> <secret>" (written before the
# notice); a client recovering the result accepts the line only with the job's secret.
# A job outlives its helper's death: its .p lets a client on a new channel recover the result
# (__p_fate); a job still running when its helper's input ends is stopped by the helper, and one
# still running when its helper died by the next helper; either marks it SPOOL/x/<id>.k (killed).
__p_nl='
'
__p_s=$1 __p_as=${4-} __p_ifs=$IFS
# The helper's own tools come from the system directories first, whatever PATH the instance's env
# sets; commands get the env's PATH back (__p_path). A fork that the process limit refuses fails
# one request with status "nofork" (`command eval`), not the helper with every command in flight.
__p_sys=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
__p_path=${PATH-/usr/bin:/bin}
PATH=$__p_sys:$__p_path
# Commands see the umask the helper was started with; the spool is private.
__p_umask=$(umask)
umask 077
# The spool can be deleted under a running helper (rm -rf /tmp/*): every user of it recreates it.
__p_spool() { { [ -d "$__p_s/x" ] && [ -d "$__p_s/bg" ]; } || mkdir -p -- "$__p_s/x" "$__p_s/bg" 2>/dev/null; }
__p_spool || { echo "cannot create the spool $__p_s" >&2; exit 70; }
__p_drop='' __p_fs='' __p_fx='' __p_pl=''
[ -z "$__p_as" ] || __p_separate  # commands as another uid (helper_files.sh)
# PRAISONAI_SANDBOX (the local provider's bubblewrap): a program, `BOX CWD ARGV...`, that runs each
# background process in a sandbox of its own, where this helper, outside every sandbox, is not;
# CWD is the sandbox's path (the client checked it). Exec jobs, which would run here beside the
# helper, are refused then ("nobox": that provider runs its commands itself).
__p_box=${PRAISONAI_SANDBOX-}
unset PRAISONAI_SANDBOX
# pids are only comparable within one pid namespace (each bwrap sandbox has its own)
__p_ns=$(readlink /proc/self/ns/pid 2>/dev/null)
__p_reply() { printf '%s %s\n' "$1" "$2"; __p_said=1; }
# Background processes get SIGINT/SIGQUIT back through env (coreutils 8.31+) where it exists:
# anything started with & has them ignored, and sh cannot undo that.
__p_sig=
env --default-signal=INT,QUIT true 2>/dev/null && __p_sig="$(command -v env) --default-signal=INT,QUIT"
__p_jobs=0

# exec: run a command in a background job; its end is announced on stderr. The command runs
# in a subshell (no exec: about 1 ms less per command) that carries PRAISONAI_EXEC_ID=<id>
# into every program it starts; the subshell's pid is recorded for the kill sweep.
__p_exec() {  # nonce id cwd stdin-file secret command [NAME=value...]: as the command uid
  __p_jd=$__p_drop
  __p_run "$@"
}
__p_rexec() {  # the same, as the helper's own user
  __p_jd=''
  __p_run "$@"
}
__p_run() {
  if [ -n "$__p_box" ]; then __p_reply "$1" nobox; return; fi
  if [ ! -d "$3" ]; then __p_reply "$1" nocwd; return; fi
  [ -d "$__p_s/x" ] || __p_spool || { __p_reply "$1" nospool; return; }
  command eval '__p_job "$@" &' || { __p_reply "$1" nofork; return; }
  __p_reply "$1" 0
  __p_jobs=$((__p_jobs + 1))
  [ $((__p_jobs % 64)) -ne 0 ] || jobs >/dev/null  # lets the shell forget finished jobs
}
__p_job() {
  exec </dev/null >/dev/null
  __p_x=$__p_s/x/$2 __p_i=$2 __p_in=${4:-/dev/null} __p_k=$5 __p_c=$6
  cd -- "$3" || { __p_notice nocwd 0; exit; }
  shift 6
  PATH=$__p_path
  # the command uid's setpriv words, split before the command's env (whose IFS may split others)
  __p_n=$#
  # shellcheck disable=SC2086 # a command prefix, split on purpose
  set -- "$@" $__p_jd
  __p_export "$__p_n" "$@"
  shift "$__p_n"
  export PRAISONAI_EXEC_ID="$__p_i"
  umask "$__p_umask"
  # .p is opened once and written twice through fd 3 (a second open costs ~10% of throughput):
  # "<command pid> <helper pid> <pid namespace>", then "done <exit-code> <flags>" on a second line.
  __p_f=0  # a spool too full for a few bytes has lost the output too (sh says why on stderr)
  command exec 3>"$__p_x.p" || __p_f=4  # `command`: a failed redirection must not end the job
  # Every fork goes through `command eval`: one the process limit refuses would end this shell
  # before its notice, and the client would wait for the job until its timeout.
  __p_fp=''
  if [ "${__p_in%/}" != "$__p_in" ]; then  # a stream: chunks the client is still writing there
    command eval 'mkfifo -m 600 -- "$__p_x.f"' || { __p_notice nostdin 0; exit; }
    command eval '__p_feed "$__p_in" >"$__p_x.f" 3>&- &' || { __p_notice nofork 0; exit; }
    __p_fp=$! __p_in=$__p_x.f
  fi
  # the command must not find the secret: not in a variable (`set` prints them all), nor in the
  # request line it came in
  # (as the command uid: a shell of its own, which has none of our variables; in its argv, as any
  # sh -c, where `pgrep -f` finds it too: not in its env, where a marker's text would mislead the
  # watchdog and the sweeps)
  if [ -n "$__p_jd" ] && [ "${#__p_c}" -gt 32000 ]; then
    # past what one argv string may hold (128 KiB, up to 4 bytes a character): its shell reads it
    # from a file of the spool's on fd 4 (printf: a builtin, not bound by that limit)
    printf '%s' "$__p_c" 2>/dev/null >"$__p_x.c" || { __p_notice nospool 0; exit; }
    command eval '"$@" -- /bin/sh -c '\''__p_c=$(cat <&4) && exec 4<&- && eval "$__p_c"'\'' /bin/sh <"$__p_in" >"$__p_x.o" 2>"$__p_x.e" 3>&- 4<"$__p_x.c" &'
  elif [ -n "$__p_jd" ] && __p_plain "$__p_c"; then  # its words, split on their single spaces
    command eval '"$@" -- $__p_c <"$__p_in" >"$__p_x.o" 2>"$__p_x.e" 3>&- &'
  elif [ -n "$__p_jd" ]; then
    command eval '"$@" -- /bin/sh -c -- "$__p_c" <"$__p_in" >"$__p_x.o" 2>"$__p_x.e" 3>&- &'
  else
    command eval '( unset __p_k __p_line; set --; eval "$__p_c" ) <"$__p_in" >"$__p_x.o" 2>"$__p_x.e" 3>&- &'
  fi || {
    [ -z "$__p_fp" ] || kill "$__p_fp" 2>/dev/null
    __p_notice nofork 0
    exit
  }
  echo "$! $$ $__p_ns" >&3 || __p_f=4  # in a subshell $$ is still the helper's pid
  wait "$!"
  __p_r=$?
  [ ! -e "$__p_x.c" ] || rm -f -- "$__p_x.c"
  # stopped by a sweep (.k is written before it kills): its code is the kill's, not the command's,
  # so the client is told that it may have run ("killed"), never handed that code as its result
  if [ -e "$__p_x.k" ]; then
    [ -z "$__p_fp" ] || kill "$__p_fp" 2>/dev/null
    __p_notice killed 0
    exit
  fi
  # a command that ended before its input did reads no more of it (as docker -i); the client
  # removes the pipe with the job's other files
  [ -z "$__p_fp" ] || kill "$__p_fp" 2>/dev/null
  [ -s "$__p_x.o" ] && __p_f=$((__p_f | 1))
  [ -s "$__p_x.e" ] && __p_f=$((__p_f | 2))
  [ -e "$__p_x.o" ] && [ -e "$__p_x.e" ] || __p_f=$((__p_f | 4))  # not created, or deleted
  # the result stays in the spool (the same file: no new one per job) for a client on a new channel
  echo "done $__p_r $__p_f $__p_k" >&3 || __p_f=$((__p_f | 4))
  __p_notice "$__p_r" "$__p_f"
}
__p_notice() {  # code flags: the job's end notice (printf: a builtin, one write, no fork)
  printf '\nD %s %s %s %s\n' "$__p_i" "$1" "$2" "$__p_k" >&2
}
# a streamed stdin: the client writes chunk files 0, 1, ... into DIR (each whole: written beside
# and renamed), then "end"; they go to stdout in order as they appear. "end" is written after the
# last chunk, so a chunk missing once "end" is seen was never sent.
__p_feed() {  # dir
  __p_n=0 __p_w=0
  while :; do
    if [ -e "$1/$__p_n" ]; then
      cat -- "$1/$__p_n" || return  # the command closed its stdin
      rm -f -- "$1/$__p_n"
      __p_n=$((__p_n + 1)) __p_w=0
    elif [ -e "$1/end" ] && [ ! -e "$1/$__p_n" ]; then
      return
    else  # the next chunk often follows at once: looked for often at first, less after idling
      __p_w=$((__p_w + 1))
      if [ "$__p_w" -le 25 ]; then __p_nap 0.002; elif [ "$__p_w" -le 70 ]; then __p_nap 0.01; else __p_nap 0.1; fi
    fi
  done
}
__p_nap() {  # seconds, a fraction: where sleep(1) takes whole seconds only, 1 s (it must not spin)
  sleep "$1" 2>/dev/null || sleep 1
}
__p_fate() {  # nonce id secret: what became of a job whose channel closed (done <code> <flags>, ...)
  __p_x=$__p_s/x/$2
  __p_result "$3"
  if [ -e "$__p_x.k" ]; then __p_reply "$1" killed
  elif [ "$__p_d" = "done" ]; then __p_reply "$1" "done $__p_dc $__p_df"
  elif [ -n "$__p_c" ] && [ -d "/proc/$__p_c" ]; then __p_reply "$1" running
  else
    __p_result "$3"  # it may have ended just now
    if [ "$__p_d" = "done" ]; then __p_reply "$1" "done $__p_dc $__p_df"; else __p_reply "$1" unknown; fi
  fi
}
# __p_x.p's two lines: __p_c __p_h __p_n (pids), then __p_d(=done) __p_dc __p_df; with a secret, a
# done line without it (a command of the helper's own uid can write the spool) counts as not done
__p_result() {  # [secret]
  __p_c='' __p_h='' __p_n='' __p_d='' __p_dc='' __p_df='' __p_dk=''
  [ -s "$__p_x.p" ] || return 0
  { read -r __p_c __p_h __p_n; read -r __p_d __p_dc __p_df __p_dk; } 2>/dev/null <"$__p_x.p"
  [ -z "$1" ] || [ "$__p_dk" = "$1" ] || __p_d=''
}
# a job counts as unfinished while its command runs, whatever its record says: a command can
# write a "done" line into its own record to escape the sweeps below
__p_unfinished() { [ "$__p_d" != "done" ] || { [ -n "$__p_c" ] && [ -d "/proc/$__p_c" ]; }; }
__p_abandon() {  # owner-test fg|bg: sweep the unfinished jobs of this pid namespace that the
  # owner test says nobody can wait for any more
  for __p_f in "$__p_s"/x/*.p; do
    __p_x=${__p_f%.p}
    [ -e "$__p_x.k" ] || [ ! -f "$__p_f" ] && continue
    __p_result
    { __p_unfinished && [ "$__p_n" = "$__p_ns" ] && "$1"; } || continue
    true 2>/dev/null >"$__p_x.k"  # a client that reconnects is told it was killed: it may have run
    if [ "$2" = bg ]; then ( __p_sweep "${__p_x##*/}" "$__p_f" & ) </dev/null >/dev/null 2>&1
    else ( __p_sweep "${__p_x##*/}" "$__p_f" ) </dev/null >/dev/null 2>&1
    fi
  done
}
__p_dead_helper() {  # the job's helper died while the job ran (no praisonai-helper at its pid)
  [ -n "$__p_h" ] || return 1
  ! { [ -d "/proc/$__p_h" ] && grep -qF praisonai-helper "/proc/$__p_h/cmdline" 2>/dev/null; }
}
__p_mine() { [ "$__p_h" = "$$" ]; }

# kill: the job's process, its descendants, and every process whose environment carries its
# marker (however deep or detached, setsid included); repeated while forks race the sweep.
__p_kill() {  # nonce marker pid-file
  command eval '( __p_sweep "$2" "$3" & )' </dev/null >/dev/null 2>&1 || { __p_reply "$1" nofork; return; }
  __p_reply "$1" 0
}
# killtree: the same, for a session's command line, known by its shell's pid (the shell runs the
# rest of the line, so it goes too); done before the reply, so the caller answers after the kill.
__p_killtree() {  # nonce marker pid
  command eval '( __p_sweep "$2" "" "$3"; exit 0 )' </dev/null >/dev/null 2>&1 || { __p_reply "$1" nofork; return; }
  __p_reply "$1" 0
}
__p_sweep() {  # marker pid-file [pid]: the tree's root is pid, else the pid file's first word
  __p_root=${3-}
  [ -n "$__p_root" ] || { [ -s "$2" ] && read -r __p_root __p_helper <"$2"; }
  __p_k=0
  while [ "$__p_k" -lt 20 ]; do
    __p_found=$(__p_tree "$__p_root"; grep -lF -- "PRAISONAI_EXEC_ID=$1" /proc/[0-9]*/environ 2>/dev/null)
    [ -n "$__p_found" ] || return 0
    for __p_f in $__p_found; do
      __p_f=${__p_f#/proc/}
      kill -9 "${__p_f%/environ}" 2>/dev/null
    done
    __p_root=
    __p_k=$((__p_k + 1))
  done
}
__p_tree() {  # pid: it and its descendants that still run, from /proc/*/stat
  [ -n "$1" ] && [ -d "/proc/$1" ] || return 0
  __p_want=" $1 " __p_grew=1
  while [ -n "$__p_grew" ]; do
    __p_grew=
    for __p_st in /proc/[0-9]*/stat; do
      read -r __p_line 2>/dev/null <"$__p_st" || continue
      __p_p=${__p_line##*) } __p_p=${__p_p#* } __p_p=${__p_p%% *}
      case $__p_want in *" $__p_p "*) ;; *) continue ;; esac
      __p_pid=${__p_line%% *}
      case $__p_want in *" $__p_pid "*) ;; *) __p_want="$__p_want$__p_pid " __p_grew=1 ;; esac
    done
  done
  # shellcheck disable=SC2086 # unquoted on purpose: one space between the pids, none around
  echo $__p_want
}

__p_ping() {  # nonce: nothing but activity (reading the request touched SPOOL/alive)
  __p_reply "$1" 0
}

__p_signal() {  # nonce pgid signal: signal a process group (a session's shell and its command)
  kill -s "$3" -- "-$2" 2>/dev/null
  __p_reply "$1" $?
}

# files: helper_files.sh

# background processes: SPOOL/bg/<id>/{meta,pid,w,out,err,rc}; rc appears when it ends.
__p_start() {  # nonce id cwd meta command [NAME=value...]
  __p_b=$__p_s/bg/$2
  if [ -z "$__p_box" ] && [ ! -d "$3" ]; then __p_reply "$1" nocwd; return; fi
  __p_spool || { __p_reply "$1" nospool; return; }
  if ! mkdir -- "$__p_b" 2>/dev/null; then
    if [ -e "$__p_b" ]; then __p_reply "$1" exists; else __p_reply "$1" nospool; fi
    return
  fi
  printf '%s\n' "$4" >"$__p_b/meta"
  true >"$__p_b/out"; true >"$__p_b/err"  # readable as soon as start() returns, before the job runs
  # w: the waiter that writes rc
  command eval '( __p_bg "$@" & echo $! >"$__p_b/w" )' </dev/null >/dev/null 2>&1 || { __p_reply "$1" nofork; return; }
  __p_reply "$1" 0
}
__p_bg() {
  __p_b=$__p_s/bg/$2 __p_i=$2 __p_c=$5 __p_w=$3
  [ -n "$__p_box" ] || cd -- "$3" || exit
  shift 5
  PATH=$__p_path
  __p_n=$#
  # shellcheck disable=SC2086 # a command prefix, split on purpose (as in __p_job)
  set -- "$@" $__p_sig $__p_drop
  __p_export "$__p_n" "$@"
  shift "$__p_n"
  PRAISONAI_EXEC_ID=bg-$__p_i "$@" ${__p_box:+"$__p_box"} ${__p_box:+"$__p_w"} /bin/sh -c -- "$__p_c" >"$__p_b/out" 2>"$__p_b/err" &
  echo "$!" >"$__p_b/pid"
  wait "$!"
  echo "$?" >"$__p_b/rc"
}
__p_ps() {  # nonce [id]: one line per process: id <tab> state <tab> meta
  for __p_b in "$__p_s"/bg/${2:-*}; do
    [ -f "$__p_b/meta" ] || continue
    __p_st=running
    if [ -s "$__p_b/rc" ]; then read -r __p_st <"$__p_b/rc"
    elif [ -s "$__p_b/pid" ]; then
      read -r __p_p <"$__p_b/pid"
      if [ ! -d "/proc/$__p_p" ]; then  # gone: lost, unless its waiter is about to write rc
        __p_w=
        [ -s "$__p_b/w" ] && read -r __p_w <"$__p_b/w"
        if [ -s "$__p_b/rc" ]; then read -r __p_st <"$__p_b/rc"
        elif [ -z "$__p_w" ] || [ ! -d "/proc/$__p_w" ]; then __p_st=lost
        fi
      fi
    fi
    read -r __p_m <"$__p_b/meta"
    printf '%s\t%s\t%s\n' "${__p_b##*/}" "$__p_st" "$__p_m"
  done
  __p_reply "$1" 0
}

# env bound to the instance after it was made (a warm pool's claim): every later command has it
__p_env() {  # nonce size, then SIZE bytes of NAME='value' lines to add (size 0: only load)
  __p_st=0
  if [ "$2" -eq 0 ]; then :
  elif __p_spool && true 2>/dev/null >>"$__p_s/env"; then head -c "$2" >>"$__p_s/env" || __p_st=nospace
  else head -c "$2" >/dev/null; __p_st=nospool  # consume the payload, or it would be read as requests
  fi
  PATH=$__p_path
  # shellcheck source=/dev/null # written at run time by the requests above
  if [ -r "$__p_s/env" ]; then set -a; . "$__p_s/env"; set +a; fi
  __p_path=$PATH PATH=$__p_sys:$PATH
  [ -z "$1" ] || __p_reply "$1" "$__p_st"
}
__p_env "" 0
__p_abandon __p_dead_helper bg  # jobs of helpers that died while they ran: nobody waits for them

echo $$ >"$__p_s/helper.pid"
# A helper on a container's main stdin (docker's main channel) is ready before anyone attached:
# its nonce is the first line, ": NONCE" (a no-op for a helper already running), so that its
# hello reaches the client that sent it, and the nonce is on no command line.
# The line's second word, when there is one, is the secret for our waiter (watchdog.main_command),
# which says our end with it: it goes over the waiter's pipe (fd 4), closed here before any
# command can inherit it, so the end of this channel is said by nothing a command can write.
if [ "${3-}" = attached ]; then
  IFS= read -r __p_line || exit 0
  __p_line=${__p_line#: }
  case $__p_line in *" "*) printf '%s\n' "${__p_line#* }" 2>/dev/null >&4 ;; esac
  exec 4>&-
  set -- "$1" "${__p_line%% *}"
fi
__p_reply "$2" "$$"
# `true 2>/dev/null >file`: a builtin, and not a special one, so a vanished spool cannot end the
# helper; it is recreated then, so the activity marker keeps working
while IFS= read -r __p_line; do
  true 2>/dev/null >"$__p_s/alive" || { __p_spool && true 2>/dev/null >"$__p_s/alive"; }
  [ ! -s "$__p_s/.asleep" ] || echo 2>/dev/null 1<>"$__p_s/.wake"
  # `command eval`: a fork the process limit refuses (a fork bomb) cuts this request short, where
  # it would end sh and every job with it; cut short before its reply, the request is answered
  # "nofork" (its nonce is the line's second word). A request with a payload may have left it
  # unread on our input, where the next reads would take its bytes for requests and run them:
  # then the helper ends instead (the client: "may have run"; the next helper sweeps its jobs).
  __p_said=
  command eval "$__p_line"
  if [ -z "$__p_said" ]; then
    case $__p_line in __p_write\ * | __p_fwrite\ * | __p_env\ *) exit 75 ;; :\ *) continue ;; esac  # ": NONCE": no reply
    __p_nn=${__p_line#* }
    __p_reply "${__p_nn%% *}" nofork
  fi
done
__p_abandon __p_mine fg  # our input ended (the client died or let go): nobody can wait for our jobs now

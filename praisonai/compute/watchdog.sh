# shellcheck shell=sh
# shellcheck disable=SC2016 # '...$x...' is code for __w_try's eval: it expands there, not here
# shellcheck disable=SC3045 # read -t is used only where the shell has it (probed before use)
# praisonai watchdog: the main process of a docker instance (under docker-init), POSIX sh.
# Started by watchdog.py's launcher, with an environment of its own (the user's env is for their
# commands), as:  sh -c "<this file>" praisonai-watchdog IDLE_TIMEOUT_S TTL_S SPOOL
# It exits, which stops the container (and docker, told auto_remove, removes it; a container of
# idle_action 'pause' is kept, paused, and `docker start` runs this again), when nothing
# was active for IDLE_TIMEOUT_S seconds (0: never) or the instance has run TTL_S seconds (0: no
# limit): the instance's Lifetime (praisonai/_lifetime.py), in whole seconds.
# So an instance whose client was SIGKILLed still goes away. It reads what the helper (helper.sh)
# and session shells (session_shell.sh) leave in SPOOL, without forking on their side:
#   alive           emptied per request and per session command; consumed here (one byte written)
#   x/<job>.p       "<command pid> <helper pid>": an exec is running while both processes live
#   busy/<pid>      non-empty while session <pid> (session.sh's pid) runs a command
#   busy/<pid>.by   the pid of that session's input forwarder, which ends with its client's
#                   connection (watchdog.py): a command counts only while its client is there
#   .wake           a FIFO this watchdog holds open read-write (so a write never blocks on open,
#                   and it never reaches EOF): what it waits on
#   .asleep         non-empty while it waits for a deadline: then whoever empties alive also
#                   writes a line to .wake (a builtin `echo`), which wakes it
#   .frozen         left by a pause before it freezes the container (docker pause): the first
#                   idle deadline after it is activity, not idleness (consumed here)
# A marker whose process is gone counts for nothing, so a killed client cannot keep it alive.
# x/.w and busy/.w are this watchdog's own: when one is gone (the spool was deleted inside the
# instance), markers may be missing too, so a missing marker is not taken for idle: until nothing
# that a helper or session shell started runs any more, that counts; then the spool is made again.
#
# It sleeps until something is due: while nothing runs it wakes only at the next deadline (the
# idle limit after the last activity, the ttl) or when poked, so an idle instance costs no CPU
# (under gVisor every wake-up is work for the sentry). While a command of the user's runs (any
# process carrying PRAISONAI_EXEC_ID: an exec, a session command, a background process) and for
# a second after each activity (what a request started may fork), it looks every second, for the
# process limit below and to see a command end: the idle countdown starts when it ended.
# Under dash (no `read -t`) it looks every second with `sleep 1`: correct, not free.
#
# It outlives whatever runs in the instance, a fork bomb included: it forks only through __w_try
# (a refused fork fails that one command instead of ending the shell, as it would in dash), waits
# with `read -t` where the shell has it (bash, busybox) rather than forking `sleep`, and when the
# process limit refuses forks it ends the exec that holds the most processes (as the kernel's OOM
# killer does for memory), so the instance stays usable.
__w_idle_timeout_s=$1 __w_ttl_s=$2 __w_s=$3
umask 077
__w_try() { command eval "$1" 2>/dev/null; }  # `command`: a failed fork fails it, not the shell

__w_mark() {  # the spool can be trusted from here on (see the top)
  true 2>/dev/null >"$__w_s/x/.w" && true 2>/dev/null >"$__w_s/busy/.w"
}
__w_try 'mkdir -p -- "$__w_s/busy" "$__w_s/x"'
# Markers in an image committed from another instance describe that instance's processes.
__w_try 'rm -f -- "$__w_s/alive" "$__w_s/.asleep" "$__w_s/.frozen" "$__w_s"/busy/* "$__w_s"/x/*.p'
__w_mark

__w_fifo() {  # (re)make SPOOL/.wake and hold it as fd 3; made aside then renamed into place,
  # so that a regular file a poke created there meanwhile is replaced
  __w_try 'rm -f -- "$__w_s/.wake.$$" && mkfifo -m 600 -- "$__w_s/.wake.$$"' || return 1
  command exec 3<>"$__w_s/.wake.$$" || return 1
  __w_try 'mv -f -- "$__w_s/.wake.$$" "$__w_s/.wake"'
}
# The wait: `read -t` on .wake (bash, busybox), or `sleep 1` where read has no -t (dash).
__w_timed='' __w_frac=''
if read -t 0 __w_x </dev/null 2>/dev/null && __w_fifo 2>/dev/null; then
  __w_timed=1
  echo >&3  # fractional timeouts (bash; busybox built with them): then the line is read
  if read -r -t 0.5 __w_x <&3 2>/dev/null; then __w_frac=1; else read -r -t 1 __w_x <&3; fi
fi
__w_now() {  # __w_t: centiseconds since boot: monotonic, and `read` is a builtin (no fork)
  read -r __w_up __w_rest </proc/uptime
  case $__w_up in *.*) __w_cs=${__w_up#*.}00 ;; *) __w_cs=00 ;; esac
  __w_t=$((${__w_up%.*} * 100 + 1${__w_cs%"${__w_cs#??}"} - 100))  # 1xx - 100: no octal
}
__w_sleep() {  # centiseconds (none: no deadline): until then, or until a poke
  if [ -n "$__w_timed" ]; then
    if [ -z "$1" ]; then read -r __w_x <&3
    elif [ -n "$__w_frac" ]; then read -r -t "$(($1 / 100)).$(($1 % 100 / 10))$(($1 % 10))" __w_x <&3
    else read -r -t "$((($1 + 99) / 100))" __w_x <&3
    fi
    # pokes that raced this one: drained, so the FIFO never fills and they wake nobody later
    while read -r -t 0 __w_x <&3 2>/dev/null; do read -r -t 1 __w_x <&3 || break; done
    return 0
  fi
  __w_try 'sleep 1' && return 0
  __w_now
  __w_was=$__w_t
  while __w_now && [ $((__w_t - __w_was)) -lt 100 ]; do :; done  # a refused fork: wait out the second
}

__w_busy() {  # an exec or a session command is running
  if [ ! -e "$__w_s/x/.w" ] || [ ! -e "$__w_s/busy/.w" ]; then
    __w_started
    return
  fi
  for __w_f in "$__w_s"/busy/*; do
    [ -e "$__w_f" ] || continue
    __w_p=${__w_f##*/}
    if [ ! -d "/proc/${__w_p%.by}" ]; then __w_try 'rm -f -- "$__w_f"'; continue; fi
    case $__w_p in *.by) continue ;; esac
    [ -s "$__w_f" ] || continue
    __w_by=
    [ ! -e "$__w_f.by" ] || read -r __w_by __w_rest 2>/dev/null <"$__w_f.by"
    if [ -z "$__w_by" ] || [ -d "/proc/$__w_by" ]; then return 0; fi
  done
  for __w_f in "$__w_s"/x/*.p; do
    __w_c='' __w_h=''
    read -r __w_c __w_h __w_rest 2>/dev/null <"$__w_f" || [ -n "$__w_h" ] || continue
    [ -n "$__w_h" ] && [ -d "/proc/$__w_c" ] && [ -d "/proc/$__w_h" ] && return 0
  done
  return 1
}
__w_started() {  # without markers: a child of a helper or session shell runs (their parent is 0)
  __w_roots=' '
  for __w_f in /proc/[0-9]*/stat; do
    __w_ppid "$__w_f" || continue
    [ "$__w_pp" = 0 ] && [ "$__w_pid" != 1 ] && __w_roots="$__w_roots$__w_pid "
  done
  for __w_f in /proc/[0-9]*/stat; do
    __w_ppid "$__w_f" || continue
    case $__w_roots in *" $__w_pp "*) return 0 ;; esac
  done
  # Nothing runs that a marker could have missed: make the spool again and trust it.
  __w_try 'mkdir -p -- "$__w_s/busy" "$__w_s/x"' && __w_mark
  return 1
}
__w_ppid() {  # /proc/<pid>/stat: __w_pid and its parent __w_pp
  read -r __w_line 2>/dev/null <"$1" || return 1
  __w_pid=${__w_line%% *}
  __w_pp=${__w_line##*) } __w_pp=${__w_pp#* } __w_pp=${__w_pp%% *}
}

# ---- the process limit ------------------------------------------------------------------------
__w_pd=
for __w_d in /sys/fs/cgroup/pids /sys/fs/cgroup; do
  if [ -r "$__w_d/pids.events" ]; then __w_pd=$__w_d; break; fi
done
__w_refusals() {  # __w_n: how many forks the limit has refused ("max N" in pids.events)
  __w_n=0
  [ -z "$__w_pd" ] || read -r __w_k __w_n __w_rest 2>/dev/null <"$__w_pd/pids.events"
  case $__w_n in '' | *[!0-9]*) __w_n=0 ;; esac
}
__w_refusals
__w_refused=$__w_n
__w_pids() {  # forks were refused since the last look: end the exec holding the most processes
  __w_refusals
  [ "$__w_n" -gt "$__w_refused" ] || return 0
  __w_hog || { __w_refused=$__w_n; return 0; }
  __w_was=-1 __w_i=0
  while __w_signal "$__w_top" STOP && [ "$__w_hit" != "$__w_was" ] && [ "$__w_i" -lt 50 ]; do
    __w_was=$__w_hit __w_i=$((__w_i + 1))  # stopped, they fork no more: until none is new
  done
  __w_killed=0 __w_i=0
  while __w_signal "$__w_top" KILL && [ "$__w_hit" -gt 0 ] && [ "$__w_i" -lt 50 ]; do
    __w_killed=$((__w_killed + __w_hit)) __w_i=$((__w_i + 1))
  done
  __w_max=unknown
  read -r __w_max 2>/dev/null <"$__w_pd/pids.max"
  echo "praisonai-watchdog: the instance reached its process limit ($__w_max); killed the" \
    "$__w_killed processes of the command whose PRAISONAI_EXEC_ID starts with $__w_top"
  __w_refusals
  __w_refused=$__w_n
}
__w_key() {  # /proc/<pid>/environ: __w_k, the first 16 characters of its exec marker, as a name
  __w_env='' __w_l=''
  while IFS= read -r __w_l; do __w_env=$__w_env$__w_l; done 2>/dev/null <"$1"
  __w_env=$__w_env$__w_l  # the NUL separators are dropped by read
  case $__w_env in *PRAISONAI_EXEC_ID=*) ;; *) return 1 ;; esac
  __w_k=${__w_env#*PRAISONAI_EXEC_ID=}
  __w_k=${__w_k%"${__w_k#????????????????}"}
  case $__w_k in *-*) __w_k=${__w_k%%-*}_${__w_k#*-} ;; esac  # bg-<id>: a background process
  case $__w_k in ????????????????) ;; *) return 1 ;; esac
  case $__w_k in *[!0-9A-Za-z_]*) return 1 ;; esac
}
__w_hog() {  # __w_top: the marker on the most processes
  __w_top='' __w_most=0 __w_keys=''
  for __w_f in /proc/[0-9]*/environ; do
    __w_key "$__w_f" || continue
    eval "__w_c=\${__w_n_$__w_k:-0}"
    [ "$__w_c" -gt 0 ] || __w_keys="$__w_keys $__w_k"
    __w_c=$((__w_c + 1))
    eval "__w_n_$__w_k=\$__w_c"
    if [ "$__w_c" -gt "$__w_most" ]; then __w_most=$__w_c __w_top=$__w_k; fi
  done
  for __w_k in $__w_keys; do unset "__w_n_$__w_k"; done
  [ -n "$__w_top" ]
}
__w_signal() {  # marker signal: signal every process that carries it; __w_hit: how many
  __w_hit=0
  for __w_f in /proc/[0-9]*/environ; do
    { __w_key "$__w_f" && [ "$__w_k" = "$1" ]; } || continue
    __w_p=${__w_f#/proc/}
    kill -s "$2" "${__w_p%/environ}" 2>/dev/null && __w_hit=$((__w_hit + 1))
  done
  return 0
}

__w_look() {  # __w_seen: something happened since the last look (__w_last moves to now)
  __w_seen=
  if [ -e "$__w_s/alive" ] && [ ! -s "$__w_s/alive" ]; then
    echo 2>/dev/null >"$__w_s/alive"  # consumed: a byte, not rm (no fork)
    __w_seen=1
  fi
  # (also without an idle limit: a running exec keeps the process limit watched, even one whose
  # own processes, forks of a shell, carry no marker in their environ for __w_running)
  if __w_busy; then __w_seen=1 __w_ran=1
  elif [ -n "$__w_ran" ]; then __w_seen=1 __w_ran=''  # it has ended: the countdown starts now
  fi
  [ -z "$__w_seen" ] || __w_last=$__w_t
}
__w_running() {  # a process of the user's runs (one the process limit's defense could end), or
  # may. A fork bomb growing towards the limit is processes that each live for a moment: one
  # gone by the time its environ was read, or an orphan just ended (a zombie its init reaps at
  # once), may have been one; taken for nothing, the watchdog slept through the bomb. (Other
  # zombies are not: they fork no more, and a shell may keep its finished jobs so for long.)
  for __w_f in /proc/[0-9]*/environ; do
    __w_key "$__w_f" && return 0
    [ -z "$__w_env" ] || continue
    __w_ppid "${__w_f%environ}stat" || return 0
    [ "$__w_pp" != 1 ] || return 0
  done
  return 1
}
__w_next() {  # __w_wait: 100 (a second) while anything runs or just happened, else the deadline
  __w_wait=100
  [ -n "$__w_timed" ] && [ -z "$__w_seen" ] && [ -z "$__w_ran" ] || return 0
  ! __w_running || return 0
  [ -p "$__w_s/.wake" ] || __w_fifo || return 0  # deleted with the spool: made again (ticks until then)
  echo 1 2>/dev/null >"$__w_s/.asleep" || return 0
  __w_asleep=1
  __w_look  # activity from before the line above did not poke: this look sees it
  [ -z "$__w_seen" ] && [ -z "$__w_ran" ] || return 0
  __w_wait=
  [ "$__w_idle_timeout_s" -eq 0 ] || __w_wait=$((__w_last + __w_idle_timeout_s * 100 - __w_t))
  if [ "$__w_ttl_s" -gt 0 ]; then
    __w_d=$((__w_start + __w_ttl_s * 100 - __w_t))
    if [ -z "$__w_wait" ] || [ "$__w_d" -lt "$__w_wait" ]; then __w_wait=$__w_d; fi
  fi
  [ -z "$__w_wait" ] || [ "$__w_wait" -le 8640000 ] || __w_wait=8640000  # a day: within every shell's read -t
}

__w_now
__w_start=$__w_t __w_last=$__w_t __w_ran='' __w_asleep='' __w_wait=100
while :; do
  __w_sleep "$__w_wait"
  if [ -n "$__w_asleep" ]; then true 2>/dev/null >"$__w_s/.asleep"; __w_asleep=''; fi
  __w_now
  __w_pids
  if [ "$__w_ttl_s" -gt 0 ] && [ $((__w_t - __w_start)) -ge $((__w_ttl_s * 100)) ]; then exit 0; fi
  __w_look
  if [ "$__w_idle_timeout_s" -gt 0 ] && [ -z "$__w_seen" ] \
    && [ $((__w_t - __w_last)) -ge $((__w_idle_timeout_s * 100)) ]; then
    [ -e "$__w_s/.frozen" ] || exit 0
    # frozen by a pause meanwhile (_pause.py), whose time the clock counted: the thaw is activity
    __w_try 'rm -f -- "$__w_s/.frozen"'
    __w_last=$__w_t
  fi
  __w_next
done

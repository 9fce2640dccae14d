# praisonai watchdog: the main process of a docker instance (under docker-init), POSIX sh.
# Started as:  sh -c "<this file>" praisonai-watchdog IDLE_S TTL_S SPOOL
# It exits, which stops the container (and docker, told auto_remove, removes it), when nothing
# was active for IDLE_S seconds (0: never) or the instance has run TTL_S seconds (0: no limit).
# So an instance whose client was SIGKILLed still goes away. It looks every second at what the
# helper (helper.sh) and session shells (session.sh) leave in SPOOL, without forking on their side:
#   alive           created per request and per session command; consumed (removed) here
#   x/<job>.p       "<command pid> <helper pid>": an exec is running while both processes live
#   busy/<pid>      non-empty while session shell <pid> runs a command
# A marker whose process is gone counts for nothing, so a killed client cannot keep it alive;
# a command it left running still does until it ends. Only `sleep` and `rm` are forked here.
__w_idle=$1 __w_ttl=$2 __w_s=$3
if [ "$__w_idle" -eq 0 ] && [ "$__w_ttl" -eq 0 ]; then exec sleep infinity; fi
umask 077
mkdir -p -- "$__w_s/busy" 2>/dev/null
# Markers in an image committed from another instance describe that instance's processes.
rm -f -- "$__w_s/alive" "$__w_s"/busy/* "$__w_s"/x/*.p 2>/dev/null

__w_now() {  # seconds since boot: monotonic, and `read` is a builtin (no fork, unlike date)
  read -r __w_up __w_rest </proc/uptime
  __w_t=${__w_up%.*}
}
__w_busy() {  # an exec or a session command is running
  for __w_f in "$__w_s"/busy/*; do
    [ -e "$__w_f" ] || continue
    if [ ! -d "/proc/${__w_f##*/}" ]; then rm -f -- "$__w_f"; continue; fi
    [ -s "$__w_f" ] && return 0
  done
  for __w_f in "$__w_s"/x/*.p; do
    __w_c= __w_h=
    read -r __w_c __w_h __w_rest 2>/dev/null <"$__w_f" || [ -n "$__w_h" ] || continue
    [ -n "$__w_h" ] && [ -d "/proc/$__w_c" ] && [ -d "/proc/$__w_h" ] && return 0
  done
  return 1
}

__w_now
__w_start=$__w_t __w_last=$__w_t
while :; do
  sleep 1
  __w_now
  if [ "$__w_ttl" -gt 0 ] && [ $((__w_t - __w_start)) -ge "$__w_ttl" ]; then exit 0; fi
  [ "$__w_idle" -gt 0 ] || continue
  if [ -e "$__w_s/alive" ]; then
    rm -f -- "$__w_s/alive"
    __w_last=$__w_t
  elif __w_busy; then
    __w_last=$__w_t
  elif [ $((__w_t - __w_last)) -ge "$__w_idle" ]; then
    exit 0
  fi
done

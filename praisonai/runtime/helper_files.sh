# shellcheck shell=sh
# shellcheck disable=SC2154 # __p_as, __p_s, __p_sys, __p_drop... are helper.sh's
# praisonai exec helper, its file requests and who runs what: joined before helper.sh into one
# `sh -c` script (runtime/channel.py). Functions only, but the perl programs' text.
# With UID:GID (docker, kubernetes), the helper runs as root and everything of the user's runs as
# that uid, which cannot see into, signal or trace the helper, nor open its fds or the spool: commands,
# background processes and sessions with it as every uid (setpriv; no capability, none in their
# bounding set where the container allows dropping it), file requests __p_fread/__p_fwrite with
# only its effective uid (reads by perl, whose real and saved uids stay root's: no command can
# kill, trace or open it), and files created so are the command uid's. __p_rexec runs a command as the helper's
# own user (a repository's packages and setup, or an explicit privileged call). A helper that
# cannot switch to UID:GID says so in one line on stderr and ends (status 70): the sentence of
# compute/separation.py's refusal(), which Fly and Tenki say too (theirs need perl as well).
#
# __p_drop: what starts a program as the command uid; __p_fs: a file request's tool with only its
# effective uid (and a clean env: gVisor lets the real uid's peers read a setuid process's environ)
# shellcheck disable=SC2016 # perl's code, not ours to expand
# perl UID GID PATH OFFSET [LIMIT]: the file's bytes, read with only the effective uid switched
__p_perl='my($u,$g,$p,$o,$l)=@ARGV;$)="$g $g";$>=$u;exit 3 if $>!=$u||$)!~/^$g /;open(my $f,"<:raw",$p)or exit 1;binmode STDOUT;!$o or seek($f,$o,0)or exit 1;my $n=length($l)?$l:-1;while($n){my $r=read($f,my $b,$n<0||$n>65536?65536:$n);exit 1 if!defined $r;last if!$r;print $b or exit 1;$n-=$r if $n>0}'
__p_perlread() { env -i "$__p_pl" -e "$__p_perl" "${__p_as%%:*}" "${__p_as#*:}" "$@"; }
# perl UID GID PATH SIZE PARTIAL, then SIZE bytes on stdin: __p_uwrite's steps in one process, which
# reads every byte of the payload whatever fails (sysread: never one past it) and exits 0, or 10
# isdir, 11 notfile, 12 denied, 13 nospace, 14 short, 15 "ask __p_why". The tests on PATH are
# root's, as __p_uwrite's; the rest runs with the command uid as its effective uid only
__p_perlw='my($u,$g,$p,$n,$x)=@ARGV;my $d=$p;$d=~s{/[^/]*\z}{};my $t="$d/$x";
sub take{my $r=sysread(STDIN,$_[0],$n>65536?65536:$n);$n-=$r if $r;$r}
sub fail{1 while $n>0&&take(my $b);exit $_[0]}
fail(-d _?10:11) if -e $p&&!-f _;fail(12) if -e $t||-l $t;
$)="$g $g";$>=$u;fail(3) if $>!=$u||$)!~/^$g /;
if(length $d&&!-d $d){my $q="";for(split m{/},$d){$q.=$_;mkdir $q if length $q&&!-d $q;$q.="/"}}
open(my $f,">:raw",$t) or fail(15);my $bad;
while($n>0){my $r=take(my $b);last if!$r;$bad||=!print $f $b}
$bad=1 if!close $f;if($bad||$n){unlink $t;exit($bad?13:14)}
my @s=stat $p;chmod($s[2]&07777,$t) if @s&&-f _;rename($t,$p) or do{unlink $t;exit 15};exit 0'
__p_separate() {  # __p_as (UID:GID): set __p_drop, __p_fs, __p_pl and HOME, or say why not and end
  if ! __p_sp=$(command -v setpriv) || [ "$(id -u)" != 0 ]; then
    echo "the instance cannot run commands as uid ${__p_as%%:*} apart from what frames their results: it needs root and setpriv (util-linux) in the image; add them, or ask for command_user='root' (commands then share root with it and can forge its results)" >&2
    exit 70
  fi
  __p_drop="$__p_sp --reuid=${__p_as%%:*} --regid=${__p_as#*:} --clear-groups --inh-caps=-all"
  # the bounding set too, where the container lets root drop it (CAP_SETPCAP)
  if $__p_drop --bounding-set=-all true 2>/dev/null; then __p_drop="$__p_drop --bounding-set=-all"; fi
  $__p_drop true 2>/dev/null || { echo "the instance cannot switch to uid ${__p_as%%:*} (setpriv failed)" >&2; exit 70; }
  __p_fs="$(command -v env) -i PATH=$__p_sys $__p_sp --euid=${__p_as%%:*} --egid=${__p_as#*:} --clear-groups"
  # gVisor (with no-new-privileges) sets the effective uid back to the real one on exec: there the
  # tools run as the command uid through and through, which its processes still cannot trace
  # (gVisor's ptrace_scope is 1) nor reopen our stdout through (a pipe of root's, mode 0600)
  [ "$($__p_fs id -u 2>/dev/null)" = "${__p_as%%:*}" ] || __p_fs="$(command -v env) -i PATH=$__p_sys $__p_drop"
  # Reads, where the image has perl: it switches only its effective uid, after its exec, so its
  # real and saved uids stay root's: no command can kill or trace it (its own status says so)
  __p_pl=$(command -v perl) && __p_perlread /proc/self/status 0 2>/dev/null \
    | grep -q "^Uid:[[:space:]]*0[[:space:]]*${__p_as%%:*}[[:space:]]*0[[:space:]]" || __p_pl=''
  # their HOME, when the image's env gives root's
  if [ "${HOME-/root}" = /root ]; then
    HOME=/
    while IFS=: read -r __p_u __p_x __p_uid __p_x __p_x __p_home __p_x; do
      [ "$__p_uid" != "${__p_as%%:*}" ] || { HOME=$__p_home; break; }
    done 2>/dev/null </etc/passwd
    export HOME
  fi
}
# A plain command: one program that /bin/sh would only find on PATH and start, with words that it
# would not change (no quote, expansion, glob, tilde, comment, redirection or operator; single
# spaces). setpriv starts it itself, sparing a shell's start (about 1 ms). A shell's own command
# (a builtin or keyword of any sh: dash's, busybox's, bash's), one not on PATH, or an assignment
# goes through /bin/sh, which says what it says of them ("not found"...).
__p_plain() {  # command (PATH and IFS are the command's: an IFS of its env would split it otherwise)
  [ "$IFS" = "$__p_ifs" ] || return 1
  case $1 in '' | [!A-Za-z0-9_./]* | *[!A-Za-z0-9_./:=@%+,\ -]* | *'  '* | *' ') return 1 ;; esac
  __p_w=${1%% *}
  case $__p_w in
    *=* | . | .. | alias | bg | break | builtin | cd | chdir | command | continue | declare | echo \
      | enable | eval | exec | exit | export | false | fc | fg | getopts | hash | help | jobs | kill \
      | let | local | printf | pwd | read | readonly | return | set | shift | source | test | time \
      | times | trap | true | type | typeset | ulimit | umask | unalias | unset | wait | if | then \
      | else | elif | fi | for | while | until | do | done | case | 'esac' | in | function | select \
      | coproc) return 1 ;;
    */*) [ -f "$__p_w" ] && [ -x "$__p_w" ]; return ;;
  esac
  __p_p=$PATH:
  while [ -n "$__p_p" ]; do
    __p_d=${__p_p%%:*} __p_p=${__p_p#*:}
    [ ! -f "${__p_d:-.}/$__p_w" ] || [ ! -x "${__p_d:-.}/$__p_w" ] || return 0
  done
  return 1
}
__p_export() {  # count words...: export the first COUNT words (NAME=value), each with its value
  __p_e=$1
  shift
  while [ "$__p_e" -gt 0 ]; do
    # shellcheck disable=SC2163 # a NAME=value word: exported with its value
    export "$1"
    shift
    __p_e=$((__p_e - 1))
  done
}
__p_fread() { __p_fx=$__p_fs; __p_read "$@"; __p_fx=''; }
__p_fwrite() {
  __p_fx=$__p_fs
  if [ -n "$__p_pl" ]; then __p_perlwrite "$@"
  elif [ -n "$__p_fx" ]; then __p_uwrite "$@"
  else __p_write "$@"
  fi
  __p_fx=''
}
__p_perlwrite() {  # nonce path size partial, then SIZE bytes: __p_uwrite's, in one perl (__p_perlw)
  env -i "$__p_pl" -e "$__p_perlw" "${__p_as%%:*}" "${__p_as#*:}" "$2" "$3" "$4"
  __p_ok=$?
  case $__p_ok in
    0) __p_reply "$1" 0 ;;
    10) __p_reply "$1" isdir ;;
    11) __p_reply "$1" notfile ;;
    12) __p_reply "$1" denied ;;
    13) __p_reply "$1" nospace ;;
    14) __p_reply "$1" short ;;
    15) __p_reply "$1" "$(__p_why "$2" w)" ;;
    # killed (no command can: its real and saved uids are root's), its payload perhaps half read:
    # the rest would be read as requests, so the helper ends (the client: "may have run")
    *) [ "$__p_ok" -le 128 ] || exit 75; __p_reply "$1" "$__p_ok" ;;
  esac
}
__p_fxstatus() {  # status word: "killed" for a signal, word for 1, else status
  if [ "$1" -gt 128 ]; then echo killed; elif [ "$1" = 1 ]; then echo "$2"; else echo "$1"; fi
}
# shellcheck disable=SC2086 # __p_fx: a command prefix, split on purpose
__p_uwrite() {  # nonce path size partial, then SIZE bytes: __p_write's steps with __p_fx's uid (its tools)
  __p_d=${2%/*}
  [ -z "$__p_d" ] || [ -d "$__p_d" ] || $__p_fx mkdir -p -- "$__p_d" 2>/dev/null
  __p_t=$__p_d/$4
  if [ -e "$2" ] && [ ! -f "$2" ]; then
    head -c "$3" >/dev/null
    if [ -d "$2" ]; then __p_reply "$1" isdir; else __p_reply "$1" notfile; fi
  elif [ -e "$__p_t" ] || [ -L "$__p_t" ]; then  # as __p_excl (a link there would only lead
    head -c "$3" >/dev/null  # to what the command uid may write anyway: it made it)
    __p_reply "$1" denied
  else
    # the payload is read whole, whatever became of tee (a command may kill it)
    head -c "$3" | { $__p_fx tee -- "$__p_t" >/dev/null 2>&1; __p_ok=$?; cat >/dev/null; exit $__p_ok; }
    __p_ok=$?
    if [ "$__p_ok" -gt 128 ]; then $__p_fx rm -f -- "$__p_t"; __p_reply "$1" killed
    elif [ "$__p_ok" -ne 0 ] && [ -e "$__p_t" ]; then $__p_fx rm -f -- "$__p_t"; __p_reply "$1" nospace
    elif [ "$__p_ok" -ne 0 ]; then __p_reply "$1" "$(__p_why "$2" w)"
    elif ! { __p_got=$(find "$__p_t" -maxdepth 0 -printf %s 2>/dev/null || wc -c <"$__p_t") \
      && [ $((__p_got)) -eq "$3" ]; }; then
      # our input ended inside the payload: the old file stays (find opens nothing: what a command
      # may have put at the name, a FIFO say, cannot stall us; not stat, which gVisor's statx fails)
      $__p_fx rm -f -- "$__p_t"
      __p_reply "$1" short
    else
      [ -f "$2" ] && $__p_fx chmod --reference="$2" -- "$__p_t" 2>/dev/null
      $__p_fx mv -f -- "$__p_t" "$2" 2>/dev/null
      __p_ok=$?
      [ "$__p_ok" -eq 0 ] || $__p_fx rm -f -- "$__p_t"
      if [ "$__p_ok" -eq 0 ]; then __p_reply "$1" 0
      elif [ "$__p_ok" -gt 128 ]; then __p_reply "$1" killed
      else __p_reply "$1" "$(__p_why "$2" w)"
      fi
    fi
  fi
}

# files: __p_read and __p_write are the client's own (the spool); the user's are __p_fread and
# __p_fwrite (helper_users.sh), which run the same steps as the command uid
__p_write() {  # nonce path size partial, then SIZE bytes
  # Written to a new file beside PATH, then renamed over it: a reader sees the old file or the new
  # one, never a mix of two writers. A replaced file keeps its mode (where stat -c exists); a
  # link at PATH is replaced, not written through. PARTIAL is the new file's name, made by the
  # client (praisonai/runtime/partial.py): random, and short enough to fit beside any name.
  __p_d=${2%/*}
  [ -z "$__p_d" ] || [ -d "$__p_d" ] || mkdir -p -- "$__p_d" 2>/dev/null
  __p_t=$__p_d/$4
  if [ -e "$2" ] && [ ! -f "$2" ]; then  # a directory, or a FIFO that would block the helper
    head -c "$3" >/dev/null  # consume the payload, or it would be read as requests
    if [ -d "$2" ]; then __p_reply "$1" isdir; else __p_reply "$1" notfile; fi
  elif { [ -e "$2" ] && [ ! -w "$2" ]; } || ! __p_excl "$__p_t"; then
    head -c "$3" >/dev/null
    __p_reply "$1" "$(__p_why "$2" w)"
  elif ! head -c "$3" | tee -- "$__p_t" >/dev/null 2>&1; then
    # tee reads all SIZE bytes even when the disk fills up (head would stop at the failed write)
    rm -f -- "$__p_t"
    __p_reply "$1" nospace
  elif ! { __p_got=$(wc -c <"$__p_t") && [ $((__p_got)) -eq "$3" ]; }; then
    # our input ended inside the payload (the client died or was cut off): the old file stays
    rm -f -- "$__p_t"
    __p_reply "$1" short
  else
    # one process where chmod knows --reference (GNU), else stat's mode then chmod
    [ -f "$2" ] && { chmod --reference="$2" -- "$__p_t" 2>/dev/null \
      || { __p_m=$(stat -c %a -- "$2" 2>/dev/null) && chmod "$__p_m" -- "$__p_t"; }; }
    if mv -f -- "$__p_t" "$2" 2>/dev/null; then
      __p_reply "$1" 0
    else
      rm -f -- "$__p_t"
      __p_reply "$1" "$(__p_why "$2" w)"
    fi
  fi
}
__p_excl() {  # path: create it, failing if a file is there (noclobber, no subshell: no fork). sh
  # opens a FIFO or device that is there instead (a link to one too): our names are random for that
  set -C
  true 2>/dev/null >"$1"  # `true`, not `:`: a special builtin's failed redirection ends sh
  __p_ok=$?
  set +C
  return $__p_ok
}
__p_read() {  # nonce path [offset [limit]]
  if [ -d "$2" ]; then __p_reply "$1" isdir; return; fi
  if [ ! -e "$2" ]; then __p_reply "$1" "$(__p_why "$2")"; return; fi
  # a FIFO or a device would block the helper or never end: only regular files are read
  if [ ! -f "$2" ]; then __p_reply "$1" notfile; return; fi
  # shellcheck disable=SC2086 # __p_fx: a command prefix, split on purpose
  if [ -n "$__p_fx" ] && [ -n "$__p_pl" ]; then
    __p_perlread "$2" "${3:-0}" ${4:+"$4"}
  elif [ "${3:-0}" -gt 0 ] && [ -n "$__p_fx" ]; then  # one tool: a killed one is seen
    $__p_fx dd if="$2" bs=65536 skip="$3" ${4:+count="$4"} iflag=skip_bytes,count_bytes status=none
  elif [ "${3:-0}" -gt 0 ]; then
    if [ -n "$4" ]; then $__p_fx tail -c "+$(($3 + 1))" -- "$2" | head -c "$4"; else $__p_fx tail -c "+$(($3 + 1))" -- "$2"; fi
  elif [ -n "$4" ]; then
    $__p_fx head -c "$4" -- "$2"
  else
    $__p_fx cat -- "$2"
  fi
  __p_st=$?
  # as the command uid: a file it may not read (its tool says so; nothing was read), or a tool
  # one of its commands killed (it may: the tool runs with its effective uid); the client asks again
  [ -z "$__p_fx" ] || __p_st=$(__p_fxstatus "$__p_st" denied)
  __p_reply "$1" "$__p_st"
}
__p_tail() {  # nonce path count
  tail -c "$3" -- "$2"
  __p_reply "$1" $?
}
__p_size() {  # nonce path
  if [ -f "$2" ]; then wc -c <"$2"; __p_reply "$1" 0; else __p_reply "$1" missing; fi
}
__p_why() {  # path [w]: why it cannot be read (or, with w, written)
  if [ -d "$1" ]; then echo isdir; return; fi
  if [ -e "$1" ]; then echo denied; return; fi
  __p_up=${1%/*}
  while [ -n "$__p_up" ]; do
    if [ -e "$__p_up" ]; then
      if [ ! -d "$__p_up" ]; then echo notdir; elif [ -n "$2" ]; then echo denied; else echo missing; fi
      return
    fi
    __p_up=${__p_up%/*}
  done
  echo missing
}
__p_rm() {  # nonce path...
  __p_n=$1
  shift
  rm -rf -- "$@" 2>/dev/null
  __p_reply "$__p_n" $?
}

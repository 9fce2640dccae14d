#!/usr/bin/env bash
# Extra Docker engines for the docker pool tests, each in its own network namespace (so its bridge
# and iptables rules never touch the machine's own daemon), with its own data root, exec root, pid
# file, socket and cgroup parent, all under DIR. Run as root.
#
#   dockerd-pool.sh up DIR N [IMAGE]   start engines 1..N not running yet (ready when it returns);
#                                      IMAGE (default praisonai-sandbox:latest) is copied into new
#                                      ones; `busybox` imports a 3 MB busybox rootfs as
#                                      praisonai-pool-test:busybox instead (seconds, not minutes)
#   dockerd-pool.sh down DIR           stop them all, kill what a killed engine left, remove DIR
#
# Engine i listens on unix://DIR/dI/docker.sock, and with TLS on the tcp:// address in DIR/dI/tcp
# (a veth into its namespace; client certificates in DIR/tls/client, as DOCKER_CERT_PATH wants
# them); its pid is in DIR/dI/docker.pid. `up` again restarts an engine that was killed (its data
# root is kept). Where /usr/bin/runsc exists, engines register it as .ci/run does for the main
# dockerd (runsc, runsc-nonet); `up` on a running engine reloads that (SIGHUP).
set -euo pipefail

tag() { printf 'pxp%s' "$(printf '%s' "$1" | md5sum | cut -c1-8)"; }  # netns and cgroup names of DIR

net() {  # DIR: the second octet of its engines' tcp addresses (10.NET.i.2), one per DIR
    printf '%d' $((200 + 0x$(printf '%s' "$1" | md5sum | cut -c1-2) % 50))
}

tls_certs() {  # DIR: a CA, one server certificate for every engine address, a client one; once
    local t=$1/tls sans="" i
    [ ! -e "$t/client/key.pem" ] || return 0
    mkdir -p "$t/client"
    for i in $(seq 9); do sans="$sans,IP:10.$(net "$1").$i.2"; done
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=pxp-ca \
        -keyout "$t/ca-key.pem" -out "$t/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=pxp-engine -keyout "$t/server-key.pem" -out "$t/server.csr" 2>/dev/null
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "${sans#,}" >"$t/server.ext"
    openssl x509 -req -days 2 -in "$t/server.csr" -CA "$t/ca.pem" -CAkey "$t/ca-key.pem" -CAcreateserial \
        -extfile "$t/server.ext" -out "$t/server-cert.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj /CN=pxp-client -keyout "$t/client/key.pem" -out "$t/client.csr" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >"$t/client.ext"
    openssl x509 -req -days 2 -in "$t/client.csr" -CA "$t/ca.pem" -CAkey "$t/ca-key.pem" -CAcreateserial \
        -extfile "$t/client.ext" -out "$t/client/cert.pem" 2>/dev/null
    cp "$t/ca.pem" "$t/client/ca.pem"
}

link_up() {  # DIR i NS: a veth from here into the engine's namespace, 10.NET.i.1 <-> 10.NET.i.2
    local host peer n
    n=$(net "$1")
    host="pv$(tag "$1" | cut -c4-9)$2"
    peer="pe$(tag "$1" | cut -c4-9)$2"
    ip link show "$host" >/dev/null 2>&1 && return 0
    ip link add "$host" type veth peer name "$peer"
    ip link set "$peer" netns "$3"
    ip addr add "10.$n.$2.1/30" dev "$host"
    ip link set "$host" up
    ip netns exec "$3" ip addr add "10.$n.$2.2/30" dev "$peer"
    ip netns exec "$3" ip link set "$peer" up
}

gone() {  # PID: no such process, or a zombie
    [ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

engine_config() {  # an engine's daemon.json: gVisor registered as .ci/run does it, where installed
    if [ -x /usr/bin/runsc ]; then
        echo '{"runtimes": {"runsc": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=host"]},' \
            '"runsc-nonet": {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none"]}}}'
    else
        echo '{}'
    fi
}

start_one() {  # DIR i IMAGE
    local dir=$1 i=$2 image=$3 ns d pid fresh=0
    ns="$(tag "$dir")-$i"
    d="$dir/d$i"
    if [ -S "$d/docker.sock" ] && DOCKER_HOST="unix://$d/docker.sock" docker info >/dev/null 2>&1; then
        if [ "$(engine_config)" != "$(cat "$d/daemon.json")" ]; then  # e.g. runsc installed since
            engine_config >"$d/daemon.json"
            kill -HUP "$(cat "$d/docker.pid")"  # reloads its runtimes; containers keep running
        fi
        [ "$image" != busybox ] || busybox_image "$dir" "$d"
        return 0
    fi
    [ -d "$d/data" ] || fresh=1
    # An engine that does not answer (killed) goes with its containerd, which dies after it: the
    # restarted engine would wait on a dying one. Its shims stay: it restores (and ends) them.
    for pid in $(cat "$d/docker.pid" "$d/exec/containerd/containerd.pid" 2>/dev/null || true); do
        kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 40); do gone "$pid" && break; sleep 0.25; done
    done
    rm -f "$d/docker.pid" "$d/exec/containerd/containerd.pid"  # a zombie's pid would still count
    mkdir -p "$d/data" "$d/exec"
    engine_config >"$d/daemon.json"  # not the machine's /etc/docker/daemon.json
    [ -e "/var/run/netns/$ns" ] || { ip netns add "$ns"; ip netns exec "$ns" ip link set lo up; }
    link_up "$dir" "$i" "$ns"
    tls_certs "$dir"
    echo "tcp://10.$(net "$dir").$i.2:2376" >"$d/tcp"
    # nsenter, not `ip netns exec`: that remounts /sys and hides the cgroup mounts dockerd needs.
    nsenter --net="/var/run/netns/$ns" setsid dockerd --data-root "$d/data" --exec-root "$d/exec" \
        --pidfile "$d/docker.pid" -H "unix://$d/docker.sock" -H "$(cat "$d/tcp")" --cgroup-parent "/$ns" \
        --tlsverify --tlscacert "$dir/tls/ca.pem" --tlscert "$dir/tls/server-cert.pem" \
        --tlskey "$dir/tls/server-key.pem" \
        --bip "10.231.$i.1/24" --config-file "$d/daemon.json" >"$d/dockerd.log" 2>&1 </dev/null &
    for _ in $(seq 120); do
        DOCKER_HOST="unix://$d/docker.sock" docker info >/dev/null 2>&1 && break
        sleep 0.25
    done
    DOCKER_HOST="unix://$d/docker.sock" docker info >/dev/null 2>&1 || { tail -20 "$d/dockerd.log" >&2; return 1; }
    if [ "$image" = busybox ]; then
        busybox_image "$dir" "$d"
    elif [ "$fresh" = 1 ]; then
        docker save "$image" | DOCKER_HOST="unix://$d/docker.sock" docker load -q >/dev/null
    fi
}

# Bump with every change to what the busybox image holds: an engine's older one is replaced.
busybox_revision=2

busybox_image() {  # DIR ENGINE-DIR: the engine's praisonai-pool-test:busybox, of this revision
    local have
    have=$(DOCKER_HOST="unix://$2/docker.sock" docker image inspect \
        -f '{{index .Config.Labels "praisonai.image.revision"}}' praisonai-pool-test:busybox 2>/dev/null || true)
    [ "$have" != "$busybox_revision" ] || return 0
    busybox_rootfs "$1/rootfs"
    tar -C "$1/rootfs" -c . | DOCKER_HOST="unix://$2/docker.sock" docker import -c 'ENV PATH=/bin' \
        -c "LABEL praisonai.image.revision=$busybox_revision" - praisonai-pool-test:busybox >/dev/null
}

busybox_rootfs() {  # DIR: this machine's busybox, its libraries and one applet link each, and
    # util-linux's setpriv (busybox's cannot switch uids: the helper needs it to run commands apart)
    local root=$1 applet lib
    if [ ! -f "$root/bin/setpriv" ] || [ -L "$root/bin/setpriv" ]; then
        mkdir -p "$root/bin"
        rm -f "$root/bin/setpriv"
        cp "$(command -v setpriv)" "$root/bin/setpriv"
        for lib in $(ldd "$root/bin/setpriv" | grep -o '/[^ ]*'); do
            mkdir -p "$root${lib%/*}"
            cp -L "$lib" "$root$lib"
        done
    fi
    [ ! -e "$root/bin/busybox" ] || return 0
    mkdir -p "$root/bin" "$root/etc" "$root/root" "$root/tmp"
    chmod 1777 "$root/tmp"
    cp "$(command -v busybox)" "$root/bin/busybox"
    for applet in $(busybox --list); do [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"; done
    for lib in $(ldd "$root/bin/busybox" | grep -o '/[^ ]*'); do
        mkdir -p "$root${lib%/*}"
        cp -L "$lib" "$root$lib"
    done
    echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
    echo 'root:x:0:' >"$root/etc/group"
}

stop_one() {  # DIR i: stop the engine; kill what is left of a killed one (shims, containers)
    local dir=$1 i=$2 ns d pid pids
    ns="$(tag "$dir")-$i"
    d="$dir/d$i"
    pid=$(cat "$d/docker.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; then
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    # What an engine killed by SIGKILL leaves: its containerd, the shims and the containers' processes.
    pid=$(cat "$d/exec/containerd/containerd.pid" 2>/dev/null || true)
    [ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null || true
    pids=$(ps -eo pid=,args= | awk -v d="$d/" 'index($0, d) {print $1}')
    for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
    for cg in /sys/fs/cgroup/*/"$ns"; do
        [ -d "$cg" ] || continue
        { cat "$cg"/cgroup.procs "$cg"/*/cgroup.procs 2>/dev/null || true; } | while read -r pid; do
            kill -KILL "$pid" 2>/dev/null || true
        done
        find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
    [ ! -e "/var/run/netns/$ns" ] || ip netns del "$ns" || true
    rm -f "$d/docker.pid"
}

down() {  # DIR
    local dir=$1 d
    for d in "$dir"/d*/docker.pid; do  # all at once: each takes seconds to stop
        [ ! -f "$d" ] || kill -TERM "$(cat "$d")" 2>/dev/null || true
    done
    for d in "$dir"/d*; do
        [ ! -d "$d" ] || stop_one "$dir" "${d##*/d}"
    done
    # Mounts a killed engine left (overlays, its netns files), deepest first.
    awk -v p="$dir/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
        umount -l "$m" 2>/dev/null || true
    done
    rm -rf "$dir"
}

case "${1:-}" in
    up)
        [ $# -ge 3 ] || { echo "usage: $0 up DIR N [IMAGE]" >&2; exit 2; }
        mkdir -p "$2"
        for i in $(seq "$3"); do start_one "$2" "$i" "${4:-praisonai-sandbox:latest}"; done
        ;;
    down)
        [ $# -ge 2 ] || { echo "usage: $0 down DIR" >&2; exit 2; }
        [ ! -d "$2" ] || down "$2"
        ;;
    *)
        echo "usage: $0 up DIR N [IMAGE] | down DIR" >&2
        exit 2
        ;;
esac

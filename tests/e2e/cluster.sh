#!/usr/bin/env bash
# A throwaway Kubernetes control plane on loopback: etcd, kube-apiserver, kube-scheduler
# (profile hami-scheduler, optionally with the vgpu-sched extender). No kubelet, no
# kube-controller-manager: nodes are fake (fake-nodes.sh), pods are bound but never run.
#
# usage:
#   cluster.sh up DIR                 start everything; DIR must be new, empty, or an old cluster dir
#   cluster.sh down DIR               stop every process recorded in DIR/pids (by PID)
#   cluster.sh restart-scheduler DIR  stop kube-scheduler and start it again with the current env
#   cluster.sh restart-apiserver DIR [SECONDS]  kill kube-apiserver (SIGKILL: its graceful
#                                     SIGTERM shutdown drains for more than 15 s mid-burst), wait
#                                     SECONDS (default 0) and start it again on the same port
#   cluster.sh pause-apiserver DIR SECONDS  stop kube-apiserver (SIGSTOP) for SECONDS, then SIGCONT:
#                                     connections stay open, requests hang, new TLS handshakes
#                                     time out
#   cluster.sh spawn DIR NAME CMD...  start CMD in the background, log DIR/NAME.log, PID in DIR/pids
#   cluster.sh stop DIR NAME          stop the processes recorded as NAME (SIGTERM, SIGKILL after 15 s)
#   cluster.sh env DIR                print DIR/env (KUBECONFIG=..., ports; `source` it)
#
# Environment (read by up and restart-scheduler):
#   VS_EXTENDER_URL     extender urlPrefix, e.g. https://127.0.0.1:8443; empty/unset => no extender
#                       (unless VS_EXTENDER_PORT is set, which means https://127.0.0.1:PORT)
#   VS_EXTENDER_CA      PEM file of the CA that signed the extender's serving certificate;
#                       default DIR/pki/ca.crt, which signed DIR/pki/extender.{crt,key} (SANs
#                       127.0.0.1, localhost) for vgpu-sched to serve with
#   VS_EXTENDER_CLIENT_CERT / VS_EXTENDER_CLIENT_KEY
#                       client certificate kube-scheduler presents to the extender;
#                       default DIR/pki/extender-client.{crt,key} (signed by DIR/pki/ca.crt)
#   VS_E2E_APISERVER_V / VS_E2E_SCHEDULER_V   klog verbosity (default 1 / 2)
#   VS_E2E_SCHEDULER_FLAGS                    more kube-scheduler flags (words), e.g. --feature-gates=...
#   VS_E2E_APISERVER_FLAGS                    more kube-apiserver flags (words), e.g. --runtime-config=...
#   VS_E2E_KUBE_SCHEDULER                     the kube-scheduler binary (default: the pinned one;
#                                             the preemption-verb scenario runs K8S_VERSION_VERB's)
#   VS_E2E_KUBE_APISERVER                     the kube-apiserver binary (the same)
#   VS_E2E_MANAGED       more extended resources (words) for the extender's managedResources,
#                        each ignoredByScheduler (other vendors' resources, e.g. huawei.com/Ascend910B3)
#   VS_E2E_PRIORITIZE=1  a second extender entry (same URL) with only prioritizeVerb and no
#                        managedResources: vgpu-sched also scores the pods without a GPU
#   VS_E2E_SCORE_ALL_NODES=0  leave out percentageOfNodesToScore: 100 (kube-scheduler's adaptive
#                        default, as the chart unless extender.prioritizeCpuPods; it only differs
#                        from 100 above 100 nodes)
#   VS_E2E_SCHEDULER_TEMPLATE  the KubeSchedulerConfiguration template (default
#                        templates/scheduler-config.yaml; the drop-in scenarios use
#                        templates/hami-scheduler-config.yaml, HAMi's extender stanza)
#   VS_E2E_START_TIMEOUT seconds to wait for each component (default 120)
#
# What up writes to DIR: pki/ (CA, serving and client certificates, service-account keys),
# kubeconfig (admin, system:masters), scheduler.kubeconfig (system:kube-scheduler),
# scheduler-config.yaml, etcd/ (data), *.log, pids ("name pid argv0" per line), env.
set -euo pipefail

# shellcheck source=lib/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/common.sh"

MARKER=.vs-e2e-cluster
TIMEOUT="${VS_E2E_START_TIMEOUT:-120}"

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

# ---------------------------------------------------------------- processes

# pid_alive PID ARGV0 : PID is running and is still the program we started (not a reused PID).
pid_alive() {
    local pid=$1 argv0=$2 first
    kill -0 "$pid" 2>/dev/null || return 1
    [[ -r /proc/$pid/cmdline ]] || return 0
    # A zombie (exited, not yet reaped by its new parent) counts as stopped.
    [[ "$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null)" != Z ]] || return 1
    first="$({ tr '\0' '\n' <"/proc/$pid/cmdline"; } 2>/dev/null | head -n1)"
    [[ "$first" == "$argv0" ]]
}

# spawn NAME CMD... : start CMD detached from our stdin, output to DIR/NAME.log, record its PID.
# E2E_SPAWN_ARGV0: the program CMD ends up exec'ing (when CMD is a wrapper such as unshare), which
# is what identifies the process later.
spawn() {
    local name=$1
    shift
    local argv0=${E2E_SPAWN_ARGV0:-$1}
    "$@" </dev/null >>"$DIR/$name.log" 2>&1 &
    local pid=$! i
    printf '%s %s %s\n' "$name" "$pid" "$argv0" >>"$DIR/pids"
    # Until the forked shell has exec'd, /proc/PID/cmdline is still ours and pid_alive would
    # call the process gone: wait (up to 10 s) for the exec, or for the process to die.
    for ((i = 0; i < 200; i++)); do
        pid_alive "$pid" "$argv0" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    e2e_log "started $name (pid $pid), log $DIR/$name.log"
}

# stop_procs [NAME] : stop the recorded processes (all, or those called NAME) one at a time,
# newest first (scheduler before apiserver before etcd, so each can shut down cleanly): SIGTERM,
# then SIGKILL after 15 s. Stopped ones are dropped from DIR/pids.
stop_procs() {
    local only=${1:-} name pid argv0 i deadline
    [[ -f "$DIR/pids" ]] || return 0
    local -a names=() pids=() argv0s=() keep=()
    while read -r name pid argv0; do
        [[ -n "$name" ]] || continue
        if [[ -n "$only" && "$name" != "$only" ]]; then
            keep+=("$name $pid $argv0")
            continue
        fi
        names+=("$name")
        pids+=("$pid")
        argv0s+=("$argv0")
    done <"$DIR/pids"
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        pid=${pids[i]}
        if ! pid_alive "$pid" "${argv0s[i]}"; then
            e2e_log "${names[i]} (pid $pid) was not running"
            continue
        fi
        kill -TERM "$pid" 2>/dev/null || true
        deadline=$((SECONDS + 15))
        while pid_alive "$pid" "${argv0s[i]}"; do
            if ((SECONDS >= deadline)); then
                e2e_log "${names[i]} (pid $pid) still running 15s after SIGTERM, sending SIGKILL"
                kill -KILL "$pid" 2>/dev/null || true
                sleep 0.2
                break
            fi
            sleep 0.1
        done
        e2e_log "stopped ${names[i]} (pid $pid)"
    done
    if ((${#keep[@]})); then
        printf '%s\n' "${keep[@]}" >"$DIR/pids"
    else
        rm -f "$DIR/pids"
    fi
}

# wait_until DESC NAME CMD... : poll CMD until it succeeds; fail early if process NAME died.
wait_until() {
    local desc=$1 name=$2 deadline=$((SECONDS + TIMEOUT)) pid argv0
    shift 2
    read -r _ pid argv0 < <(awk -v n="$name" '$1 == n { l = $0 } END { print l }' "$DIR/pids")
    until "$@" >/dev/null 2>&1; do
        if ! pid_alive "$pid" "$argv0"; then
            tail -n 30 "$DIR/$name.log" >&2 || true
            e2e_die "$name exited while waiting for $desc (log: $DIR/$name.log)"
        fi
        if ((SECONDS >= deadline)); then
            tail -n 30 "$DIR/$name.log" >&2 || true
            e2e_die "timed out after ${TIMEOUT}s waiting for $desc (log: $DIR/$name.log)"
        fi
        sleep 0.5
    done
    e2e_log "$desc"
}

# ---------------------------------------------------------------- certificates

# sign NAME SUBJECT EXTENSIONS [CA] : EC P-256 key DIR/pki/NAME.key and certificate NAME.crt
# signed by DIR/pki/CA.{crt,key} (default: ca, the e2e CA), valid for two days.
sign() {
    local name=$1 subj=$2 ext=$3 ca=${4:-ca} pki="$DIR/pki"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$pki/$name.key" -out "$pki/$name.csr" -subj "$subj" 2>/dev/null
    printf '%b\n' "$ext" >"$pki/$name.ext"
    openssl x509 -req -in "$pki/$name.csr" -CA "$pki/$ca.crt" -CAkey "$pki/$ca.key" \
        -set_serial "0x$(openssl rand -hex 12)" -days 2 -sha256 \
        -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
    rm -f "$pki/$name.csr" "$pki/$name.ext"
}

make_pki() {
    local pki="$DIR/pki"
    mkdir -p "$pki"
    chmod 700 "$pki"
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 2 -sha256 -subj "/CN=vs-e2e-ca" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    local server="basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment"
    server+="\nextendedKeyUsage=serverAuth"
    local client="basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment"
    client+="\nextendedKeyUsage=clientAuth"
    sign apiserver "/CN=kube-apiserver" \
        "$server\nsubjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    # Serving certificate for the extender/webhook under test (vgpu-sched --cert_file/--key_file).
    sign extender "/CN=vgpu-sched" "$server\nsubjectAltName=IP:127.0.0.1,DNS:localhost"
    sign admin "/O=system:masters/CN=vs-e2e-admin" "$client"
    sign scheduler "/CN=system:kube-scheduler" "$client"
    sign extender-client "/CN=vs-e2e-kube-scheduler" "$client"
    # Front proxy (aggregation layer), as kubeadm sets it up: without a request-header CA, the
    # delegated authentication of kube-scheduler's own HTTPS endpoint logs errors forever.
    openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$pki/front-proxy-ca.key" -out "$pki/front-proxy-ca.crt" -days 2 -sha256 \
        -subj "/CN=vs-e2e-front-proxy-ca" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    sign front-proxy-client "/CN=front-proxy-client" "$client" front-proxy-ca
    # Service-account token signing key pair.
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$pki/sa.key" 2>/dev/null
    openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
}

# write_kubeconfig FILE USER : kubeconfig for DIR/pki/USER.{crt,key}, all data embedded.
write_kubeconfig() {
    local file=$1 user=$2 pki="$DIR/pki"
    cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: vs-e2e
    cluster:
      server: https://127.0.0.1:$API_PORT
      certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
  - name: $user
    user:
      client-certificate-data: $(base64 -w0 "$pki/$user.crt")
      client-key-data: $(base64 -w0 "$pki/$user.key")
contexts:
  - name: vs-e2e
    context:
      cluster: vs-e2e
      user: $user
current-context: vs-e2e
EOF
    chmod 600 "$file"
}

# ---------------------------------------------------------------- components

start_etcd() {
    spawn etcd "$E2E_BIN/etcd" \
        --name=vs-e2e \
        --data-dir="$DIR/etcd" \
        --listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
        --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster="vs-e2e=http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster-state=new \
        --unsafe-no-fsync \
        --log-level=warn
    wait_until "etcd healthy on 127.0.0.1:$ETCD_PORT" etcd \
        curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

# Authorization is RBAC,Node as in a real cluster, not AlwaysAllow: the admin (system:masters)
# and kube-scheduler (system:kube-scheduler, bootstrap RBAC) work as in production, and a
# component given a restricted identity (e.g. vgpu-sched under the chart's ClusterRole) is
# refused exactly where it would be refused in a cluster, so missing RBAC rules show up here.
start_apiserver() {
    local pki="$DIR/pki"
    # --service-cluster-ip-range only sizes the virtual IP allocator (no traffic goes there);
    # --endpoint-reconciler-type=none: the "kubernetes" Endpoints would be 127.0.0.1, which
    # Endpoints validation refuses; nothing here needs it. MutatingAdmissionWebhook is in the
    # default admission chain; it is named to make the dependency visible.
    spawn kube-apiserver "$E2E_KUBE_APISERVER" \
        --bind-address=127.0.0.1 \
        --advertise-address=127.0.0.1 \
        --secure-port="$API_PORT" \
        --tls-cert-file="$pki/apiserver.crt" \
        --tls-private-key-file="$pki/apiserver.key" \
        --client-ca-file="$pki/ca.crt" \
        --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="$pki/sa.pub" \
        --service-account-signing-key-file="$pki/sa.key" \
        --service-cluster-ip-range=10.0.0.0/24 \
        --endpoint-reconciler-type=none \
        --authorization-mode=RBAC,Node \
        --requestheader-client-ca-file="$pki/front-proxy-ca.crt" \
        --requestheader-allowed-names=front-proxy-client \
        --requestheader-username-headers=X-Remote-User \
        --requestheader-group-headers=X-Remote-Group \
        --requestheader-extra-headers-prefix=X-Remote-Extra- \
        --proxy-client-cert-file="$pki/front-proxy-client.crt" \
        --proxy-client-key-file="$pki/front-proxy-client.key" \
        --enable-admission-plugins=MutatingAdmissionWebhook \
        --cert-dir="$DIR/apiserver-certs" \
        --profiling=false \
        --v="${VS_E2E_APISERVER_V:-1}" ${VS_E2E_APISERVER_FLAGS:-}
    wait_until "kube-apiserver ready on https://127.0.0.1:$API_PORT" kube-apiserver \
        "$E2E_BIN/kubectl" --kubeconfig="$DIR/kubeconfig" --request-timeout=5s get --raw /readyz
}

# Things a controller-manager would do that the tests rely on.
bootstrap_objects() {
    local k=("$E2E_BIN/kubectl" --kubeconfig="$DIR/kubeconfig")
    # The ServiceAccount admission plugin rejects pods whose service account does not exist;
    # the serviceaccount controller that creates "default" in every namespace is not running.
    wait_until "namespace default exists" kube-apiserver "${k[@]}" get namespace default
    "${k[@]}" create serviceaccount default --namespace=default >/dev/null
}

extender_url() {
    if [[ -n "${VS_EXTENDER_URL:-}" ]]; then
        printf '%s' "$VS_EXTENDER_URL"
    elif [[ -n "${VS_EXTENDER_PORT:-}" ]]; then
        printf 'https://127.0.0.1:%s' "$VS_EXTENDER_PORT"
    fi
}

render_scheduler_config() {
    local url tmpl out ext=0 tls=0 prio=0 all=1
    [[ "${VS_E2E_SCORE_ALL_NODES:-1}" == 0 ]] && all=0
    url="$(extender_url)"
    tmpl="$(cat "${VS_E2E_SCHEDULER_TEMPLATE:-$E2E_DIR/templates/scheduler-config.yaml}")"
    out=${tmpl//@KUBECONFIG@/$DIR/scheduler.kubeconfig}
    if [[ -n "$url" ]]; then
        ext=1
        [[ "${VS_E2E_PRIORITIZE:-0}" == 1 ]] && prio=1
        out=${out//@EXTENDER_URL@/$url}
        if [[ "$url" == https://* ]]; then
            tls=1
            local ca=${VS_EXTENDER_CA:-$DIR/pki/ca.crt}
            local crt=${VS_EXTENDER_CLIENT_CERT:-$DIR/pki/extender-client.crt}
            local key=${VS_EXTENDER_CLIENT_KEY:-$DIR/pki/extender-client.key}
            local f
            for f in "$ca" "$crt" "$key"; do [[ -r "$f" ]] || e2e_die "$f not readable"; done
            out=${out//@EXTENDER_HTTPS@/true}
            out=${out//@EXTENDER_CA_DATA@/$(base64 -w0 "$ca")}
            # The client key as a file, not keyData: kube-scheduler at -v=2 logs the extender
            # configuration whole ("Creating extender", the component config), keyData included.
            out=${out//@EXTENDER_CLIENT_CERT_FILE@/$(realpath "$crt")}
            out=${out//@EXTENDER_CLIENT_KEY_FILE@/$(realpath "$key")}
        else
            out=${out//@EXTENDER_HTTPS@/false}
        fi
    fi
    local managed="" r
    for r in ${VS_E2E_MANAGED:-}; do
        managed+="      - name: $r"$'\n'"        ignoredByScheduler: true"$'\n'
    done
    out=${out//$'\n'"#@ MANAGED"$'\n'/$'\n'$managed}
    printf '%s\n' "$out" | awk -v ext="$ext" -v tls="$tls" -v prio="$prio" -v all="$all" '
        function skip(b) { return (b == "extender" && !ext) || (b == "tls" && !tls) || (b == "prioritize" && !prio) || (b == "score_all" && !all) }
        /^#@ BEGIN / { if (skip($3)) off++; next }
        /^#@ END /   { if (skip($3)) off--; next }
        !off' >"$DIR/scheduler-config.yaml"
    if ((ext)); then
        e2e_log "kube-scheduler: extender $url"
    else
        e2e_log "kube-scheduler: no extender (VS_EXTENDER_URL unset)"
    fi
}

start_scheduler() {
    render_scheduler_config
    spawn kube-scheduler "$E2E_KUBE_SCHEDULER" \
        --config="$DIR/scheduler-config.yaml" \
        --bind-address=127.0.0.1 \
        --secure-port="$SCHED_PORT" \
        --cert-dir="$DIR/scheduler-certs" \
        --authentication-kubeconfig="$DIR/scheduler.kubeconfig" \
        --authorization-kubeconfig="$DIR/scheduler.kubeconfig" \
        --v="${VS_E2E_SCHEDULER_V:-2}" ${VS_E2E_SCHEDULER_FLAGS:-}
    wait_until "kube-scheduler healthy on 127.0.0.1:$SCHED_PORT" kube-scheduler \
        curl -fsSk "https://127.0.0.1:$SCHED_PORT/healthz"
}

write_env() {
    cat >"$DIR/env" <<EOF
# Written by tests/e2e/cluster.sh up; source it.
VS_E2E_CLUSTER_DIR='$DIR'
KUBECONFIG='$DIR/kubeconfig'
VS_E2E_APISERVER='https://127.0.0.1:$API_PORT'
VS_E2E_ETCD='http://127.0.0.1:$ETCD_PORT'
VS_E2E_SCHEDULER_PORT='$SCHED_PORT'
VS_E2E_CA='$DIR/pki/ca.crt'
VS_E2E_EXTENDER_CERT='$DIR/pki/extender.crt'
VS_E2E_EXTENDER_KEY='$DIR/pki/extender.key'
API_PORT=$API_PORT
ETCD_PORT=$ETCD_PORT
ETCD_PEER_PORT=$ETCD_PEER_PORT
SCHED_PORT=$SCHED_PORT
EOF
}

load_env() {
    [[ -f "$DIR/env" ]] || e2e_die "$DIR/env missing: is $DIR a cluster started by 'cluster.sh up'?"
    # shellcheck disable=SC1091
    . "$DIR/env"
}

# ---------------------------------------------------------------- commands

up_failed() {
    if (($1)); then
        e2e_log "up failed, stopping what was started"
        stop_procs
    fi
    exit "$1"
}

cmd_up() {
    e2e_need_bins etcd kube-apiserver kube-scheduler kubectl vs-e2e
    [[ -x "$E2E_KUBE_SCHEDULER" ]] || e2e_die "$E2E_KUBE_SCHEDULER missing: run tests/e2e/build.sh"
    [[ -x "$E2E_KUBE_APISERVER" ]] || e2e_die "$E2E_KUBE_APISERVER missing: run tests/e2e/build.sh"
    e2e_need_cmds openssl curl base64 awk
    if [[ -e "$DIR" ]]; then
        if [[ -f "$DIR/$MARKER" ]]; then
            if [[ -s "$DIR/pids" ]]; then
                e2e_die "$DIR has running processes recorded: run 'cluster.sh down $DIR' first"
            fi
            # An old cluster directory of ours: start afresh.
            find "$DIR" -mindepth 1 -delete
        elif [[ -n "$(ls -A "$DIR")" ]]; then
            e2e_die "$DIR exists and is not empty (and not an e2e cluster dir)"
        fi
    fi
    mkdir -p "$DIR"
    DIR="$(cd "$DIR" && pwd)"
    touch "$DIR/$MARKER"
    # Whatever goes wrong from here on, leave nothing running.
    trap 'up_failed $?' EXIT
    local t0=$SECONDS
    read -r ETCD_PORT ETCD_PEER_PORT API_PORT SCHED_PORT < <("$E2E_BIN/vs-e2e" freeport 4)
    make_pki
    write_kubeconfig "$DIR/kubeconfig" admin
    write_kubeconfig "$DIR/scheduler.kubeconfig" scheduler
    write_env
    start_etcd
    start_apiserver
    bootstrap_objects
    start_scheduler
    trap - EXIT
    local sv="" ver=$K8S_VERSION
    if [[ "$E2E_KUBE_APISERVER" != "$E2E_BIN/kube-apiserver" ]]; then
        ver="$("$E2E_KUBE_APISERVER" --version | awk '{ print $2 }')"
        sv=" (kube-apiserver: $E2E_KUBE_APISERVER)"
    fi
    [[ "$E2E_KUBE_SCHEDULER" == "$E2E_BIN/kube-scheduler" ]] || sv+=" (kube-scheduler: $E2E_KUBE_SCHEDULER)"
    e2e_log "control plane $ver$sv up in $((SECONDS - t0))s: export KUBECONFIG=$DIR/kubeconfig"
}

cmd_down() {
    [[ -d "$DIR" ]] || e2e_die "$DIR: no such directory"
    [[ -f "$DIR/$MARKER" ]] || e2e_die "$DIR is not an e2e cluster directory"
    stop_procs
}

cmd_restart_scheduler() {
    load_env
    stop_procs kube-scheduler
    start_scheduler
}

cmd_restart_apiserver() {
    local pid
    load_env
    pid="$(awk '$1 == "kube-apiserver" { p = $2 } END { print p }' "$DIR/pids")"
    [[ -n "$pid" ]] || e2e_die "no kube-apiserver recorded in $DIR/pids"
    kill -KILL "$pid" 2>/dev/null || true
    e2e_log "killed kube-apiserver (pid $pid) with SIGKILL"
    stop_procs kube-apiserver # waits for it to be gone, drops it from DIR/pids
    sleep "${1:-0}"
    start_apiserver
}

cmd_pause_apiserver() {
    local pid
    load_env
    pid="$(awk '$1 == "kube-apiserver" { p = $2 } END { print p }' "$DIR/pids")"
    [[ -n "$pid" ]] || e2e_die "no kube-apiserver recorded in $DIR/pids"
    kill -STOP "$pid" || e2e_die "cannot stop kube-apiserver (pid $pid)"
    e2e_log "kube-apiserver (pid $pid) stopped (SIGSTOP) for ${1:?seconds}s"
    sleep "$1"
    kill -CONT "$pid" || e2e_die "cannot continue kube-apiserver (pid $pid)"
    e2e_log "kube-apiserver (pid $pid) continued (SIGCONT)"
}

main() {
    (($# >= 2)) || usage
    local cmd=$1
    DIR=$2
    shift 2
    if [[ -d "$DIR" ]]; then DIR="$(cd "$DIR" && pwd)"; fi
    case $cmd in
    up) cmd_up ;;
    down) cmd_down ;;
    restart-scheduler) cmd_restart_scheduler ;;
    restart-apiserver) cmd_restart_apiserver "$@" ;;
    pause-apiserver) cmd_pause_apiserver "$@" ;;
    spawn)
        (($# >= 2)) || usage
        [[ -f "$DIR/$MARKER" ]] || e2e_die "$DIR is not an e2e cluster directory"
        spawn "$@"
        ;;
    stop)
        (($# == 1)) || usage
        [[ -f "$DIR/$MARKER" ]] || e2e_die "$DIR is not an e2e cluster directory"
        stop_procs "$1"
        ;;
    env) load_env && cat "$DIR/env" ;;
    *) usage ;;
    esac
}

main "$@"

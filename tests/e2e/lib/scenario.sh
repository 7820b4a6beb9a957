# shellcheck shell=bash
# Scenario runner and helpers for tests/e2e. Source it after lib/common.sh.
#
# A scenario is a file tests/e2e/scenarios/<name>.sh that defines a function
# scenario_<name> (dashes in <name> become underscores). The runner gives every scenario a fresh
# control plane in $E2E_RUN_DIR/<name>/ (cluster.sh up), exports KUBECONFIG and
# E2E_CLUSTER (that directory), calls the function in a subshell with `set -e`, then tears the
# cluster down (cluster.sh down), pass or fail. The function fails by returning non-zero or by
# any command failing; it is skipped by returning 77 (e2e_skip).
#
# Optional hook scenario_<name>_pre_up runs (in the same subshell) before `cluster.sh up`; it may
# export VS_EXTENDER_URL / VS_EXTENDER_PORT / VS_EXTENDER_CA to put an extender stanza in the
# kube-scheduler configuration, e.g. pick a port with `"$E2E_BIN/vs-e2e" freeport` for vgpu-sched.
# Processes a scenario starts should be started with e2e_spawn so `down` stops them.

# shellcheck source=secrets.sh
. "$E2E_DIR/lib/secrets.sh"

E2E_PASSED=0
E2E_FAILED=0
E2E_FAILED_NAMES=()
E2E_SKIPPED=0
E2E_INTERRUPTED=0
E2E_T0=0

e2e_kubectl() { "$E2E_BIN/kubectl" --kubeconfig="$KUBECONFIG" "$@"; }

# e2e_spawn NAME CMD... : background process whose PID cluster.sh down will stop.
e2e_spawn() { "$E2E_DIR/cluster.sh" spawn "$E2E_CLUSTER" "$@"; }

# e2e_fake_nodes [FLAGS] NAME... : see fake-nodes.sh create.
e2e_fake_nodes() { "$E2E_DIR/fake-nodes.sh" create "$E2E_CLUSTER" "$@"; }

# e2e_agent_start [FLAGS] : kubelet + HAMi device-plugin emulation for fake nodes (fake-nodes.sh
# agent; FLAGS such as --hold 20ms go to vs-e2e agent).
e2e_agent_start() { "$E2E_DIR/fake-nodes.sh" agent "$E2E_CLUSTER" "$@"; }

e2e_skip() {
    e2e_log "SKIP: $*"
    return 77
}

e2e_fail() {
    e2e_log "FAIL: $*"
    return 1
}

# e2e_wait SECONDS DESC CMD... : poll CMD every 0.5 s until it succeeds.
e2e_wait() {
    local secs=$1 desc=$2 deadline
    shift 2
    deadline=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            e2e_fail "timed out after ${secs}s waiting for: $desc"
            return 1
        fi
        sleep 0.5
    done
}

# e2e_jsonpath KIND NAME JSONPATH [kubectl args] : one field of one object ("" if unset).
e2e_jsonpath() {
    local kind=$1 name=$2 path=$3
    shift 3
    e2e_kubectl get "$kind" "$name" -o "jsonpath=$path" "$@"
}

# e2e_has_value KIND NAME JSONPATH [kubectl args] : the field is set (non-empty).
e2e_has_value() { [[ -n "$(e2e_jsonpath "$@")" ]]; }

# e2e_field_is KIND NAME JSONPATH WANT [kubectl args]
e2e_field_is() {
    local kind=$1 name=$2 path=$3 want=$4
    shift 4
    [[ "$(e2e_jsonpath "$kind" "$name" "$path" "$@")" == "$want" ]]
}

# e2e_gone KIND NAME [kubectl args] : the object does not exist.
e2e_gone() { [[ -z "$(e2e_kubectl get "$@" --ignore-not-found -o name)" ]]; }

# e2e_expect_eq WHAT GOT WANT
e2e_expect_eq() {
    if [[ "$2" != "$3" ]]; then
        e2e_fail "$1: got '$2', want '$3'"
        return 1
    fi
}

# e2e_run_one FILE : run the scenario in FILE on a fresh control plane; update the counters.
e2e_run_one() {
    local file=$1 name fn rc t0
    name="$(basename "$file" .sh)"
    fn="scenario_${name//-/_}"
    local dir="$E2E_RUN_DIR/$name"
    t0=$SECONDS
    e2e_log "=== RUN   $name"
    set +e
    (
        set -e
        # shellcheck disable=SC1090
        . "$file"
        declare -F "$fn" >/dev/null || e2e_die "$file does not define $fn"
        if declare -F "${fn}_pre_up" >/dev/null; then "${fn}_pre_up"; fi
        export E2E_CLUSTER="$dir"
        export KUBECONFIG="$dir/kubeconfig"
        trap '"$E2E_DIR/cluster.sh" down "$E2E_CLUSTER" >>"$E2E_CLUSTER/down.log" 2>&1 || true' EXIT
        # Interrupted: still tear down (the EXIT trap runs on exit).
        trap 'exit 130' INT TERM
        "$E2E_DIR/cluster.sh" up "$dir"
        "$fn"
    ) 2> >(tee "$E2E_RUN_DIR/$name.out" >&2)
    rc=$?
    # No key material or bearer token in any log of the run (lib/secrets.sh), pass or fail.
    local sec
    if ((rc != 77)) && [[ -d "$dir" ]]; then
        sec="$(e2e_secrets_check "$dir" "$E2E_RUN_DIR/$name.out" 2>&1)" || {
            ((rc != 0)) || rc=1
        }
        printf '%s\n' "$sec" | tee -a "$E2E_RUN_DIR/$name.out" >&2
    fi
    set -e
    case $rc in
    0)
        E2E_PASSED=$((E2E_PASSED + 1))
        e2e_log "--- PASS  $name ($((SECONDS - t0))s)"
        ;;
    77)
        E2E_SKIPPED=$((E2E_SKIPPED + 1))
        e2e_log "--- SKIP  $name ($((SECONDS - t0))s)"
        ;;
    *)
        E2E_FAILED=$((E2E_FAILED + 1))
        E2E_FAILED_NAMES+=("$name")
        e2e_log "--- FAIL  $name ($((SECONDS - t0))s), logs in $dir"
        ;;
    esac
}

# e2e_run_scenarios LABEL FILE... : run each scenario, print "LABEL: N passed, M failed" and
# return non-zero if any failed (or none ran). Work directory: $VS_E2E_RUN_DIR if set (kept),
# else a temporary directory that is removed when everything passed.
e2e_run_scenarios() {
    local label=$1 f b keep=1
    shift
    E2E_T0=$SECONDS
    for b in etcd kube-apiserver kube-scheduler kubectl vs-e2e; do
        if [[ ! -x "$E2E_BIN/$b" ]]; then
            e2e_log "$E2E_BIN/$b missing: run tests/e2e/build.sh first"
            printf '%s: 0 passed, %d failed\n' "$label" "$#"
            return 1
        fi
    done
    if [[ -n "${VS_E2E_RUN_DIR:-}" ]]; then
        E2E_RUN_DIR="$VS_E2E_RUN_DIR"
        mkdir -p "$E2E_RUN_DIR"
    else
        E2E_RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/vs-e2e.XXXXXX")"
        keep=0
    fi
    E2E_RUN_DIR="$(cd "$E2E_RUN_DIR" && pwd)"
    export E2E_RUN_DIR
    # Ctrl-C / SIGTERM: the running scenario tears its cluster down, then no further one starts.
    trap 'E2E_INTERRUPTED=1' INT TERM
    local left=$#
    for f in "$@"; do
        e2e_run_one "$f"
        left=$((left - 1))
        if ((E2E_INTERRUPTED)); then
            # The interrupted scenario failed (or was cut short); the rest count as failed.
            e2e_log "interrupted: $left scenario(s) not run"
            E2E_FAILED=$((E2E_FAILED + left))
            break
        fi
    done
    trap - INT TERM
    ((E2E_SKIPPED == 0)) || e2e_log "$E2E_SKIPPED scenario(s) skipped"
    if ((E2E_FAILED == 0 && keep == 0)); then
        rm -rf "$E2E_RUN_DIR"
    else
        e2e_log "work directory kept: $E2E_RUN_DIR"
    fi
    e2e_log "total $((SECONDS - E2E_T0))s"
    # Repeat why each failed scenario failed, so the end of a long log says it.
    local n
    for n in "${E2E_FAILED_NAMES[@]}"; do
        e2e_log "failed: $n, its last lines:"
        grep -v '^\s*$' "$E2E_RUN_DIR/$n.out" 2>/dev/null | tail -n 8 | sed 's/^/    /' >&2 || true
    done
    printf '%s: %d passed, %d failed\n' "$label" "$E2E_PASSED" "$E2E_FAILED"
    ((E2E_FAILED == 0 && E2E_PASSED + E2E_SKIPPED > 0 && !E2E_INTERRUPTED))
}

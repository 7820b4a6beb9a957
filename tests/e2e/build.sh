#!/usr/bin/env bash
# Build the binaries the end-to-end tests run, from source, through the Go module proxy:
#   etcd, kube-apiserver, kube-scheduler, kubectl  (pinned in versions.env)
#   helm                                           (chart rendering / lint)
#   vs-e2e                                         (tests/e2e/tools: fake nodes, device-plugin emulation)
#   verb: kube-apiserver, kube-scheduler K8S_VERSION_VERB  (the verb-mode preemption scenario;
#         Go >= 1.27)
#
# usage: tests/e2e/build.sh [all|k8s|etcd|helm|tools|verb]...  (default: all = tools etcd k8s helm
#        verb)
#
# Output: ${VS_E2E_CACHE:-$HOME/.cache/vgpu-sched-e2e}/bin-<k8s version>/ (verb: bin-<its
# version>/). Each component has a
# stamp file there naming exactly what was built (versions, Go version, flags, tool sources); when
# the stamp matches and the binaries exist the component is skipped, so a warm run is a no-op.
# Go's module and build caches stay at their defaults (go env GOMODCACHE / GOCACHE).
#
# Kubernetes is not meant to be consumed as a module: its go.mod requires every staging module
# (k8s.io/api, k8s.io/apimachinery, ...) at v0.0.0 and replaces it with ./staging/src/...,
# which only works inside the kubernetes repository. So we generate a throwaway module under the
# cache that requires k8s.io/kubernetes@K8S_VERSION and replaces each of those staging modules
# with its published tag (v0.<minor>.<patch>), then builds the commands from it.
set -euo pipefail

# shellcheck source=lib/common.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/common.sh"

# Kubernetes v1.36 and everything else pinned here need Go >= 1.26. If a pin is ever moved to
# a release whose go.mod says go >= 1.27, the go command needs `export GOTOOLCHAIN=go1.27.3`
# (fetched from the module proxy); set VS_E2E_GOTOOLCHAIN=go1.27.3 to do that here.
if [[ -n "${VS_E2E_GOTOOLCHAIN:-}" ]]; then
    export GOTOOLCHAIN="$VS_E2E_GOTOOLCHAIN"
fi
e2e_need_cmds go awk sha256sum
# Static binaries, as Kubernetes and etcd release them; no C toolchain needed.
export CGO_ENABLED=0
GO_ID="$(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"
# Bump when the build recipe below changes, to invalidate old stamps.
RECIPE=1

mkdir -p "$E2E_BIN" "$E2E_SRC"

now() { date +%s; }
fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# stamp_ok NAME WANT BIN... : true when bin-dir/.stamp-NAME equals WANT and every BIN exists.
stamp_ok() {
    local name=$1 want=$2 b
    shift 2
    [[ -f "$E2E_BIN/.stamp-$name" ]] || return 1
    [[ "$(cat "$E2E_BIN/.stamp-$name")" == "$want" ]] || return 1
    for b in "$@"; do [[ -x "$E2E_BIN/$b" ]] || return 1; done
}

# install_bins TMPDIR NAME WANT BIN... : move freshly built binaries in place, then the stamp.
install_bins() {
    local tmp=$1 name=$2 want=$3 b
    shift 3
    for b in "$@"; do mv -f "$tmp/$b" "$E2E_BIN/$b"; done
    printf '%s\n' "$want" >"$E2E_BIN/.stamp-$name"
    rm -rf "$tmp"
}

# new_module DIR MODPATH : a fresh, empty module directory to build from.
new_module() {
    rm -rf "$1"
    mkdir -p "$1"
    (cd "$1" && go mod init "$2" >/dev/null 2>&1)
}

# k8s_build DIR VERSION EMPTY REPLACES BIN... : build the Kubernetes commands BIN... of VERSION
# into DIR, stamped .stamp-k8s. EMPTY: module paths replaced by an empty local module (staging
# modules the proxy does not serve and the commands do not import); REPLACES: extra
# "path=path@version" replacements. Both are part of the stamp.
k8s_build() {
    local dir=$1 version=$2 empty=$3 replaces=$4
    shift 4
    local bins=("$@")
    local staging_version="v0.${version#v1.}"
    local want="recipe=$RECIPE k8s.io/kubernetes@$version staging@$staging_version $GO_ID"
    [[ -z "$empty" ]] || want+=" empty=${empty// /,}"
    [[ -z "$replaces" ]] || want+=" replace=${replaces// /,}"
    mkdir -p "$dir"
    E2E_BIN=$dir
    if stamp_ok k8s "$want" "${bins[@]}"; then
        e2e_log "k8s: ${bins[*]} $version up to date"
        return
    fi
    e2e_log "k8s: building ${bins[*]} $version (staging modules $staging_version)"
    local mod="$E2E_SRC/k8s-$version"
    new_module "$mod" vs-e2e.invalid/k8s-build
    cd "$mod"

    # Kubernetes' own go.mod lists every staging module as a v0.0.0 requirement.
    local gomod staging=() m
    gomod="$(go mod download -json "k8s.io/kubernetes@$version" |
        awk -F'"' '$2 == "GoMod" { print $4 }')"
    [[ -f "$gomod" ]] || e2e_die "could not download go.mod of k8s.io/kubernetes@$version"
    mapfile -t staging < <(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print $1 }' "$gomod" | sort -u)
    ((${#staging[@]} > 10)) || e2e_die "found only ${#staging[@]} staging modules in $gomod"
    e2e_log "k8s: replacing ${#staging[@]} staging modules with @$staging_version${empty:+ (empty: $empty)}"

    local edits=(-require="k8s.io/kubernetes@$version") r
    for m in "${staging[@]}"; do
        if [[ " $empty " == *" $m "* ]]; then
            mkdir -p "empty/$m"
            printf 'module %s\n\ngo 1.22\n' "$m" >"empty/$m/go.mod"
            edits+=(-replace="$m=./empty/$m")
        else
            edits+=(-replace="$m=$m@$staging_version")
        fi
    done
    for r in $replaces; do edits+=(-replace="$r"); done
    for m in "${bins[@]}"; do edits+=(-tool="k8s.io/kubernetes/cmd/$m"); done
    go mod edit "${edits[@]}"
    if [[ -n "$empty" ]]; then
        # tidy also loads the tests of every dependency, some of which import the emptied
        # modules: -e keeps going; the build below needs none of them (or fails).
        go mod tidy -e 2>&1 | grep -v '^go: downloading' >"$mod/tidy.log" || true
    else
        go mod tidy
    fi

    # The version stamp Kubernetes' own build sets (hack/lib/version.sh), so /version,
    # `kubectl version` and the components' compatibility version say the version.
    local minor=${version#v1.}
    minor=${minor%%.*}
    local ld="-s -w" pkg
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ld+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
    done
    local tmp="$dir/.tmp-k8s"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    local pkgs=()
    for m in "${bins[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$m"); done
    go build -trimpath -buildvcs=false -ldflags "$ld" -o "$tmp/" "${pkgs[@]}"
    install_bins "$tmp" k8s "$want" "${bins[@]}"
}

build_k8s() { k8s_build "$E2E_BIN" "$K8S_VERSION" "" "" kube-apiserver kube-scheduler kubectl; }

# The verb-mode control plane, with its own Go toolchain (set only for this build).
build_verb() {
    export GOTOOLCHAIN="$K8S_VERB_GOTOOLCHAIN"
    GO_ID="$(go env GOVERSION) $(go env GOOS)/$(go env GOARCH)"
    k8s_build "$E2E_BIN_VERB" "$K8S_VERSION_VERB" "$K8S_VERB_EMPTY_MODULES" "$K8S_VERB_REPLACES" \
        kube-apiserver kube-scheduler
}

build_etcd() {
    local want="recipe=$RECIPE go.etcd.io/etcd/server/v3@$ETCD_VERSION $GO_ID"
    if stamp_ok etcd "$want" etcd; then
        e2e_log "etcd: $ETCD_VERSION up to date"
        return
    fi
    e2e_log "etcd: building $ETCD_VERSION"
    # The etcd server module's go.mod has local replace directives (../api, ...), so
    # `go install ...@version` refuses it; as a dependency of a throwaway module those replaces
    # are ignored and the published api/client/pkg modules of the same release are used.
    local mod="$E2E_SRC/etcd-$ETCD_VERSION"
    new_module "$mod" vs-e2e.invalid/etcd-build
    cd "$mod"
    go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" -tool=go.etcd.io/etcd/server/v3
    go mod tidy
    local tmp="$E2E_BIN/.tmp-etcd"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
    install_bins "$tmp" etcd "$want" etcd
}

build_helm() {
    local want="recipe=$RECIPE helm.sh/helm/v3@$HELM_VERSION $GO_ID"
    if stamp_ok helm "$want" helm; then
        e2e_log "helm: $HELM_VERSION up to date"
        return
    fi
    e2e_log "helm: building $HELM_VERSION"
    local mod="$E2E_SRC/helm-$HELM_VERSION"
    new_module "$mod" vs-e2e.invalid/helm-build
    cd "$mod"
    go mod edit -require="helm.sh/helm/v3@$HELM_VERSION" -tool=helm.sh/helm/v3/cmd/helm
    go mod tidy
    # helm's Makefile derives the default Kubernetes version (.Capabilities.KubeVersion for
    # `helm template`, deprecation checks in `helm lint`) from its client-go v0.X => 1.X.
    local kv kminor
    kv="$(go list -m -f '{{.Version}}' k8s.io/client-go)"
    kminor=${kv#v0.}
    kminor=${kminor%%.*}
    local ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
    ld+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
    ld+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1"
    ld+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$kminor"
    ld+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1"
    ld+=" -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$kminor"
    local tmp="$E2E_BIN/.tmp-helm"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    go build -trimpath -buildvcs=false -ldflags "$ld" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm
    install_bins "$tmp" helm "$want" helm
}

build_tools() {
    local src="$E2E_DIR/tools" sum
    [[ -f "$src/go.mod" ]] || e2e_die "$src/go.mod missing"
    # The stamp carries a hash of the tool sources, so editing them triggers a rebuild.
    sum="$(cd "$src" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) -print0 |
        LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | awk '{print $1}')"
    local want="recipe=$RECIPE tools@$sum $GO_ID"
    if stamp_ok tools "$want" vs-e2e; then
        e2e_log "tools: vs-e2e up to date"
        return
    fi
    e2e_log "tools: building vs-e2e"
    local tmp="$E2E_BIN/.tmp-tools"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    (cd "$src" && go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$tmp/vs-e2e" ./cmd/vs-e2e)
    # Its Go tests run with each build: the stamp above stands for sources that passed them. The
    # build's flags and no vet, so the test reuses the packages just compiled (vet would analyse
    # every dependency first: minutes on a cold cache, against seconds).
    e2e_log "tools: go test ./cmd/vs-e2e"
    (cd "$src" && go test -vet=off -trimpath -buildvcs=false -count=1 ./cmd/vs-e2e) >&2
    install_bins "$tmp" tools "$want" vs-e2e
}

main() {
    local comps=("$@") c t0 t start
    ((${#comps[@]})) || comps=(all)
    if [[ " ${comps[*]} " == *" all "* ]]; then comps=(tools etcd k8s helm verb); fi
    for c in "${comps[@]}"; do
        case $c in
        k8s | etcd | helm | tools | verb) ;;
        *) e2e_die "unknown component '$c' (want all, k8s, etcd, helm, tools, verb)" ;;
        esac
    done
    e2e_log "cache: $E2E_BIN ($GO_ID; GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE))"
    start=$(now)
    for c in "${comps[@]}"; do
        t0=$(now)
        (build_"$c")
        t=$(($(now) - t0))
        e2e_log "$c: done in $(fmt_secs "$t")"
    done
    e2e_log "build total: $(fmt_secs $(($(now) - start))) (${comps[*]})"
    # Sizes, so it is visible what the cache holds.
    local d
    for d in "$E2E_BIN" "$E2E_BIN_VERB"; do
        [[ -d "$d" ]] || continue
        find "$d" -maxdepth 1 -type f ! -name '.*' -printf "$(basename "$d")/%f %s\n" | sort |
            awk '{ printf "  %-34s %6.1f MiB\n", $1, $2 / 1048576 }' >&2
    done
}

main "$@"

#!/usr/bin/env bash
# Self-test of the e2e "no secret in any log" check (lib/secrets.sh), without a control plane:
# a fake cluster directory (pki/ with an EC and an RSA key, a kubeconfig with a bearer token,
# logs holding what real logs hold: paths, certificates, "Bearer <masked>") must pass; then each
# kind of secret is planted once, on a known line, and the check must fail naming exactly that
# file, line and kind, without printing the secret. Run by ctest (e2e_secrets_check).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib/secrets.sh
. "$here/lib/secrets.sh"

work="$(mktemp -d "${TMPDIR:-/tmp}/vs-secrets-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

fail() {
    printf 'FAIL: %s\n' "$*"
    failed=$((failed + 1))
}

# The fake cluster directory.
base="$work/base"
mkdir -p "$base/pki" "$base/etcd"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$base/pki/extender.key" 2>/dev/null
openssl genrsa -traditional -out "$base/pki/sa.key" 2048 2>/dev/null
openssl req -new -x509 -key "$base/pki/extender.key" -subj /CN=vs-test -days 1 -out "$base/pki/extender.crt" 2>/dev/null
grep -q 'BEGIN RSA PRIVATE KEY' "$base/pki/sa.key" || { echo "openssl did not write a traditional RSA key"; exit 1; }
token="eyJhbGciOiJFUzI1NiIsImtpZCI6InRlc3QifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dmdwdS1zY2hlZDp2Z3B1LXNjaGVkIn0.$(openssl rand -base64 48 | tr '+/' '-_' | tr -d '=\n')"
cat >"$base/vgpu-sched.kubeconfig" <<EOF
apiVersion: v1
kind: Config
users:
  - name: vgpu-sched
    user:
      token: $token
EOF
# etcd's data directory is not a log (and holds secrets by design): it is not searched.
printf 'token %s\n' "$token" >"$base/etcd/member.log"
cat >"$base/vgpu-sched.log" <<'EOF'
ts=2026-12-01T00:00:00Z level=info event=start kubeconfig=/c/vgpu-sched.kubeconfig cert_file=/c/pki/extender.crt key_file=/c/pki/extender.key
ts=2026-12-01T00:00:01Z level=warn event=kube_error msg="token file /var/run/token: empty"
ts=2026-12-01T00:00:02Z level=info event=bind pod=default/p node=n1
EOF
{
    printf 'I1201 scheduler.go:592] "Creating extender" TLSConfig={"CertFile":"/c/pki/extender-client.crt","KeyFile":"/c/pki/extender-client.key","CAData":"%s"}\n' \
        "$(base64 -w0 "$base/pki/extender.crt")"
    printf 'I1201 round_trippers.go:473] "Request" headers=<\n\tAuthorization: Bearer <masked>\n>\n'
    printf 'I1201 using bearer token file\n'
} >"$base/kube-scheduler.log"
: >"$base/down.log"
printf 'scenario output line 1\nscenario output line 2\n' >"$work/base.out"

# run_check DIR OUT : e2e_secrets_check DIR OUT; prints its status, then its messages.
run_check() {
    local rc=0 msg
    msg="$(e2e_secrets_check "$1" "$2" 2>&1)" || rc=$?
    printf '%s\n%s\n' "$rc" "$msg"
}

# Clean: must pass, and must have searched the logs and the extra file.
out="$(run_check "$base" "$work/base.out")"
if [[ "$(head -n1 <<<"$out")" == 0 ]] &&
    grep -qxE 'secrets: 4 log files \([0-9]+ KiB\) searched for [0-9]+ kinds of secret \([0-9]+ fixed strings\): none found' <<<"$out"; then
    passed=$((passed + 1))
else
    fail "clean logs: $out"
fi

# The key's DER in base64, unbroken (the PEM body without its line breaks).
der_b64="$(grep -v -- ----- "$base/pki/extender.key" | tr -d '\n')"
key_line="$(sed -n 3p "$base/pki/extender.key")"
sig=${token##*.}

# plant NAME FILE TEXT SECRET WANT... : TEXT appended to FILE (relative to the cluster
# directory, or "OUT" for the scenario output) of a fresh copy; the check must fail with exactly
# the lines WANT ("@" stands for FILE:LINE), and SECRET must not appear in its output.
plant() {
    local name=$1 rel=$2 text=$3 secret=$4 dir f line out want got
    dir="$work/$name"
    shift 4
    cp -r "$base" "$dir"
    cp "$work/base.out" "$dir.out"
    if [[ "$rel" == OUT ]]; then f="$dir.out"; else f="$dir/$rel"; fi
    printf '%s\n' "$text" >>"$f"
    line="$(wc -l <"$f")"
    out="$(run_check "$dir" "$dir.out")"
    want="$(printf '1\n'; for w in "$@"; do printf 'secrets: %s\n' "${w/@/$f:$line}"; done
        printf 'secrets: FAIL: %d secret kind(s) found in the logs (lines above; secrets not shown)\n' "$#")"
    got="$out"
    if [[ "$got" != "$want" ]]; then
        fail "$name: got:
$got
want:
$want"
        return
    fi
    if [[ -n "$secret" ]] && grep -qF -- "$secret" <<<"$out"; then
        fail "$name: the secret was printed"
        return
    fi
    passed=$((passed + 1))
}

plant pem-header vgpu-sched.log "ts=x level=debug event=tls key=-----BEGIN PRIVATE KEY-----" "" \
    "@: PEM private key header"
plant pem-header-rsa kube-apiserver.log "-----BEGIN RSA PRIVATE KEY-----" "" \
    "@: PEM private key header"
plant token vgpu-sched.log "ts=x level=debug event=kube_request token=$token" "$token" \
    "@: the bearer token of vgpu-sched.kubeconfig" "@: a JWT (bearer token)"
plant token-signature agent.log "signature $sig" "$sig" \
    "@: the bearer token of vgpu-sched.kubeconfig"
plant other-jwt kube-apiserver.log "token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzb21lb25lIn0.c2lnbmF0dXJl" "" \
    "@: a JWT (bearer token)"
plant bearer-header kube-scheduler.log $'\tAuthorization: Bearer 0123456789abcdef' "0123456789abcdef" \
    "@: an Authorization: Bearer header with a token"
plant bearer-json vgpu-sched.log '{"authorization":"bearer x-opaque-token"}' "x-opaque-token" \
    "@: an Authorization: Bearer header with a token"
plant key-line down.log "oops $key_line oops" "$key_line" \
    "@: material of the private key pki/extender.key"
plant key-data kube-scheduler.log "    keyData: $(base64 -w0 "$base/pki/extender.key")" "$(base64 -w0 "$base/pki/extender.key")" \
    "@: base64 of a PEM private key header" "@: material of the private key pki/extender.key"
plant key-data-rsa kube-scheduler.log "client-key-data: $(base64 -w0 "$base/pki/sa.key")" "$(base64 -w0 "$base/pki/sa.key")" \
    "@: base64 of a PEM private key header" "@: material of the private key pki/sa.key"
plant key-der etcd.log "der=$der_b64" "$der_b64" \
    "@: material of the private key pki/extender.key"
plant scenario-output OUT "token: $token" "$token" \
    "@: the bearer token of vgpu-sched.kubeconfig" "@: a JWT (bearer token)"

printf 'secrets-test: %d passed, %d failed\n' "$passed" "$failed"
((failed == 0))

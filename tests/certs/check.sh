#!/usr/bin/env bash
# Checks certs/gen-certs.sh: generates into a temporary directory (defaults and custom names),
# verifies the chain, the purpose, every DNS/IP name, the key pair, that a re-run reuses the CA,
# and that bad arguments are refused. Prints "certs: N passed, M failed"; non-zero on failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
gen=$root/certs/gen-certs.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0
ok() { passed=$((passed+1)); echo "ok   $1"; }
bad() { failed=$((failed+1)); echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/     /' "$2" | head -20; }
check() { # name command...
  local name=$1; shift
  if "$@" >"$tmp/out" 2>&1; then ok "$name"; else bad "$name" "$tmp/out"; fi
}
fingerprint() { openssl x509 -in "$1" -noout -fingerprint -sha256; }
pubkey() { openssl pkey -in "$1" -pubout 2>/dev/null || openssl x509 -in "$1" -noout -pubkey; }

if ! command -v openssl >/dev/null; then
  echo "certs: openssl not found"; echo "certs: 0 passed, 1 failed"; exit 1
fi

# names DIR SVC NS: the chain and each name verify as a TLS server certificate
names() {
  local dir=$1 svc=$2 ns=$3
  check "$dir: chain" openssl verify -CAfile "$dir/ca.crt" -purpose sslserver "$dir/tls.crt"
  for host in "$svc" "$svc.$ns" "$svc.$ns.svc" "$svc.$ns.svc.cluster.local" localhost; do
    check "$dir: name $host" openssl verify -CAfile "$dir/ca.crt" -purpose sslserver \
      -verify_hostname "$host" "$dir/tls.crt"
  done
  check "$dir: ip 127.0.0.1" openssl verify -CAfile "$dir/ca.crt" -verify_ip 127.0.0.1 "$dir/tls.crt"
  if openssl verify -CAfile "$dir/ca.crt" -verify_hostname "other.$ns.svc" "$dir/tls.crt" \
      >/dev/null 2>&1; then
    bad "$dir: other name refused"
  else
    ok "$dir: other name refused"
  fi
  if [ "$(pubkey "$dir/tls.key")" = "$(openssl x509 -in "$dir/tls.crt" -noout -pubkey)" ]; then
    ok "$dir: key matches certificate"
  else
    bad "$dir: key matches certificate"
  fi
  if openssl x509 -in "$dir/ca.crt" -noout -ext basicConstraints | grep -q 'CA:TRUE' &&
     openssl x509 -in "$dir/tls.crt" -noout -ext basicConstraints | grep -q 'CA:FALSE'; then
    ok "$dir: basic constraints"
  else
    bad "$dir: basic constraints"
  fi
  if [ "$(stat -c %a "$dir/tls.key")" = 600 ] && [ "$(stat -c %a "$dir/ca.key")" = 600 ]; then
    ok "$dir: keys are 0600"
  else
    bad "$dir: keys are 0600"
  fi
}

check "generate with defaults" "$gen" --out "$tmp/def"
cp "$tmp/out" "$tmp/gen.out"
for line in "CA certificate:      $tmp/def/ca.crt" "serving certificate: $tmp/def/tls.crt" \
            "serving key:         $tmp/def/tls.key" \
            "names:               DNS:vgpu-sched DNS:vgpu-sched.kube-system DNS:vgpu-sched.kube-system.svc DNS:vgpu-sched.kube-system.svc.cluster.local DNS:localhost IP:127.0.0.1"; do
  if grep -qxF "$line" "$tmp/gen.out"; then ok "prints: $line"; else bad "prints: $line" "$tmp/gen.out"; fi
done
names "$tmp/def" vgpu-sched kube-system

check "generate custom" "$gen" --service hami-scheduler --namespace gpu --out "$tmp/cus" \
  --dns sched.example.org --ip 10.1.2.3 --days 30
names "$tmp/cus" hami-scheduler gpu
check "$tmp/cus: extra dns" openssl verify -CAfile "$tmp/cus/ca.crt" -verify_hostname sched.example.org "$tmp/cus/tls.crt"
check "$tmp/cus: extra ip" openssl verify -CAfile "$tmp/cus/ca.crt" -verify_ip 10.1.2.3 "$tmp/cus/tls.crt"
end=$(openssl x509 -in "$tmp/cus/tls.crt" -noout -enddate | cut -d= -f2)
if [ $(( ($(date -d "$end" +%s) - $(date +%s)) / 86400 )) -le 30 ]; then
  ok "--days 30 honoured"
else
  bad "--days 30 honoured"
fi

# Re-running keeps the CA and re-issues a certificate that still chains to it.
ca1=$(fingerprint "$tmp/def/ca.crt"); leaf1=$(fingerprint "$tmp/def/tls.crt")
check "re-run" "$gen" --out "$tmp/def"
if grep -q "reusing CA" "$tmp/out" && [ "$ca1" = "$(fingerprint "$tmp/def/ca.crt")" ]; then
  ok "re-run reuses the CA"
else
  bad "re-run reuses the CA" "$tmp/out"
fi
if [ "$leaf1" != "$(fingerprint "$tmp/def/tls.crt")" ]; then ok "re-run re-issues"; else bad "re-run re-issues"; fi
names "$tmp/def" vgpu-sched kube-system

for args in "--bogus" "--service Bad_Name" "--namespace" "--days 0"; do
  # shellcheck disable=SC2086
  if "$gen" --out "$tmp/bad" $args >"$tmp/out" 2>&1; then
    bad "refuses $args"
  else
    ok "refuses $args"
  fi
done
if [ -e "$tmp/bad/tls.crt" ]; then bad "refused runs write nothing"; else ok "refused runs write nothing"; fi

echo "certs: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

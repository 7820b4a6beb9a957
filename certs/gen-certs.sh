#!/usr/bin/env bash
# gen-certs: makes a CA and a serving certificate for vgpu-sched's webhook/extender listener
# with openssl. The certificate names the Service (<svc>, <svc>.<ns>, <svc>.<ns>.svc,
# <svc>.<ns>.svc.cluster.local) plus localhost and 127.0.0.1 for local runs. An existing CA in
# the output directory is reused, so certificates re-issued later still chain to it.
set -euo pipefail

usage() {
  cat <<USAGE
usage: $0 [--service NAME] [--namespace NS] [--out DIR] [--days N] [--dns NAME]... [--ip ADDR]...
  --service    Service name (default vgpu-sched)
  --namespace  Service namespace (default kube-system)
  --out        output directory (default certs/out beside this script)
  --days       certificate lifetime in days (default 825; the CA gets 3650)
  --dns, --ip  extra subject alternative names (repeatable)
Writes ca.crt, ca.key (reused when present), tls.crt and tls.key.
USAGE
}

svc=vgpu-sched
ns=kube-system
out="$(cd "$(dirname "$0")" && pwd)/out"
days=825
extra_dns=()
extra_ip=()
while [ $# -gt 0 ]; do
  case "$1" in
    --service|-s) svc=${2:?--service needs a value}; shift 2 ;;
    --service=*) svc=${1#*=}; shift ;;
    --namespace|-n) ns=${2:?--namespace needs a value}; shift 2 ;;
    --namespace=*) ns=${1#*=}; shift ;;
    --out|-o) out=${2:?--out needs a value}; shift 2 ;;
    --out=*) out=${1#*=}; shift ;;
    --days) days=${2:?--days needs a value}; shift 2 ;;
    --days=*) days=${1#*=}; shift ;;
    --dns) extra_dns+=("${2:?--dns needs a value}"); shift 2 ;;
    --dns=*) extra_dns+=("${1#*=}"); shift ;;
    --ip) extra_ip+=("${2:?--ip needs a value}"); shift 2 ;;
    --ip=*) extra_ip+=("${1#*=}"); shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gen-certs: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
# DNS-1123 labels only: the names end up in certificate extensions and kubectl commands.
label='^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'
[[ $svc =~ $label ]] || { echo "gen-certs: invalid service name: $svc" >&2; exit 2; }
[[ $ns =~ $label ]] || { echo "gen-certs: invalid namespace: $ns" >&2; exit 2; }
[[ $days =~ ^[1-9][0-9]*$ ]] || { echo "gen-certs: invalid --days: $days" >&2; exit 2; }
command -v openssl >/dev/null || { echo "gen-certs: openssl not found" >&2; exit 1; }

mkdir -p "$out"
umask 077
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -s "$out/ca.crt" ] && [ -s "$out/ca.key" ]; then
  echo "reusing CA $out/ca.crt"
else
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$work/ca.key" -sha256 -days 3650 -subj "/CN=${svc}-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -addext "subjectKeyIdentifier=hash" \
    -out "$work/ca.crt"
  mv "$work/ca.key" "$out/ca.key"
  mv "$work/ca.crt" "$out/ca.crt"
fi

san="DNS:${svc},DNS:${svc}.${ns},DNS:${svc}.${ns}.svc,DNS:${svc}.${ns}.svc.cluster.local"
san="${san},DNS:localhost,IP:127.0.0.1"
for d in "${extra_dns[@]+"${extra_dns[@]}"}"; do san="${san},DNS:${d}"; done
for i in "${extra_ip[@]+"${extra_ip[@]}"}"; do san="${san},IP:${i}"; done
cat >"$work/leaf.ext" <<EXT
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = ${san}
EXT
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/tls.key" 2>/dev/null
openssl req -new -key "$work/tls.key" -subj "/CN=${svc}.${ns}.svc" -out "$work/tls.csr"
openssl x509 -req -in "$work/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" \
  -set_serial "0x$(openssl rand -hex 16)" -days "$days" -sha256 -extfile "$work/leaf.ext" \
  -out "$work/tls.crt" 2>/dev/null
openssl verify -CAfile "$out/ca.crt" "$work/tls.crt" >/dev/null
mv "$work/tls.key" "$out/tls.key"
mv "$work/tls.crt" "$out/tls.crt"
chmod 644 "$out/ca.crt" "$out/tls.crt"

cat <<DONE
CA certificate:      $out/ca.crt
CA key:              $out/ca.key
serving certificate: $out/tls.crt
serving key:         $out/tls.key
names:               ${san//,/ }
Use with the chart (certs.mode=existingSecret):
  kubectl -n $ns create secret generic ${svc}-tls --type=kubernetes.io/tls \\
    --from-file=tls.crt=$out/tls.crt --from-file=tls.key=$out/tls.key --from-file=ca.crt=$out/ca.crt
  helm install ${svc} charts/vgpu-sched -n $ns --set certs.mode=existingSecret \\
    --set certs.existingSecret.name=${svc}-tls --set certs.existingSecret.caBundle=\$(base64 -w0 $out/ca.crt)
Or locally: vgpu-sched serve --http_bind=127.0.0.1:8443 --cert_file=$out/tls.crt --key_file=$out/tls.key
DONE

#!/usr/bin/env bash
# Checks charts/vgpu-sched with helm: lint, then renders with default and non-default values
# (two replicas, each certificate mode, failurePolicy Fail) and asserts key lines of each
# render, and that invalid values are refused. Usage: tests/chart/check.sh [HELM]
# (default: helm from PATH). Prints "chart: N passed, M failed"; exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
chart=$root/charts/vgpu-sched
helm=${1:-$(command -v helm || true)}
if [ -z "$helm" ] || ! [ -x "$helm" ]; then
  echo "chart: helm not found (pass its path as \$1 or put it on PATH)"
  echo "chart: 0 passed, 1 failed"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0

ok() { passed=$((passed+1)); echo "ok   $1"; }
bad() { failed=$((failed+1)); echo "FAIL $1"; [ -n "${2:-}" ] && sed 's/^/     /' "$2" | head -20; }

# render NAME ARGS...: helm template into $tmp/NAME.yaml
render() {
  local name=$1; shift
  if "$helm" template rel "$chart" -n gpu-system --kube-version v1.31.2 "$@" >"$tmp/$name.yaml" 2>"$tmp/$name.err"; then
    ok "render $name"
  else
    bad "render $name" "$tmp/$name.err"
  fi
}
# has NAME REGEX...: every extended regex matches some line of the render
has() {
  local name=$1; shift
  for re in "$@"; do
    if grep -Eq -- "$re" "$tmp/$name.yaml"; then ok "$name has /$re/"; else bad "$name has /$re/"; fi
  done
}
hasnt() {
  local name=$1; shift
  for re in "$@"; do
    if grep -Eq -- "$re" "$tmp/$name.yaml"; then bad "$name lacks /$re/"; else ok "$name lacks /$re/"; fi
  done
}
# refuses NAME MESSAGE ARGS...: helm template must fail with MESSAGE in its error
refuses() {
  local name=$1 msg=$2; shift 2
  if "$helm" template rel "$chart" -n gpu-system "$@" >/dev/null 2>"$tmp/$name.err"; then
    bad "refuses $name (rendered)"
  elif grep -qF -- "$msg" "$tmp/$name.err"; then
    ok "refuses $name"
  else
    bad "refuses $name (wrong error)" "$tmp/$name.err"
  fi
}

if "$helm" lint "$chart" >"$tmp/lint.out" 2>&1; then ok "helm lint"; else bad "helm lint" "$tmp/lint.out"; fi
if "$helm" lint "$chart" --set replicas=2 --set certs.mode=certManager >"$tmp/lint2.out" 2>&1; then
  ok "helm lint (non-default)"
else
  bad "helm lint (non-default)" "$tmp/lint2.out"
fi

render default
has default \
  '^kind: Deployment$' '^kind: MutatingWebhookConfiguration$' '^kind: PodDisruptionBudget$' \
  'apiVersion: kubescheduler.config.k8s.io/v1$' 'leaderElect: false$' \
  'schedulerName: hami-scheduler$' 'urlPrefix: https://127.0.0.1:8443$' 'filterVerb: filter$' \
  'preemptVerb: preempt$' 'bindVerb: bind$' 'nodeCacheCapable: true$' 'enableHTTPS: true$' \
  'caFile: /tls/ca.crt$' \
  'serverName: rel-vgpu-sched.gpu-system.svc$' 'httpTimeout: 30s$' \
  '- name: nvidia.com/gpu$' '- name: nvidia.com/gpumem$' '- name: nvidia.com/gpumem-percentage$' \
  '- name: nvidia.com/gpucores$' 'ignoredByScheduler: true$' \
  'image: registry.k8s.io/kube-scheduler:v1.31.2$' \
  '- --http_bind=0.0.0.0:8443$' '- --cert_file=/tls/tls.crt$' '- --key_file=/tls/tls.key$' \
  '- --scheduler-name=hami-scheduler$' '- --node-scheduler-policy=binpack$' \
  '- --gpu-scheduler-policy=spread$' '- --metrics-bind-address=:9395$' \
  '- --device-config-file=/device-config.yaml$' '- --node-lock-timeout=5m$' \
  '- --node-lock-retry-timeout=28s$' '- --leader-elect=false$' '- --tls-min-version=VersionTLS12$' \
  '- --bind-queue-depth=1$' '- --bind-queue-saturation=0$' \
  'mountPath: /device-config.yaml$' 'fieldPath: metadata.name$' 'fieldPath: metadata.namespace$' \
  'hami.io/webhook: ignore$' 'app.kubernetes.io/component: hami-scheduler$' \
  'hami.io/scheduler-role: leader$' 'port: 443$' 'targetPort: https$' 'port: 9395$' \
  'path: /healthz$' 'path: /readyz$' 'scheme: HTTPS$' 'runAsUser: 65532$' \
  'admissionReviewVersions: \["v1", "v1beta1"\]$' 'path: /webhook$' 'failurePolicy: Ignore$' \
  'sideEffects: None$' 'timeoutSeconds: 10$' 'reinvocationPolicy: Never$' \
  'matchPolicy: Equivalent$' 'operations: \["CREATE"\]$' 'resources: \["pods"\]$' \
  'caBundle: [A-Za-z0-9+/=]{100,}$' '^kind: Secret$' 'name: system:kube-scheduler$' \
  'name: system:volume-scheduler$' 'name: extension-apiserver-authentication-reader$' \
  'resources: \["pods/binding"\]$' 'resources: \["resourcequotas"\]$' \
  'resources: \["pods/eviction"\]$' 'resources: \["poddisruptionbudgets"\]$' \
  'resources: \["deviceclasses"\]$' 'resources: \["resourceslices", "resourceclaims"\]$' \
  '- --gpu-preemption=auto$' \
  'defaultGPUNum: 1$' 'gpuCorePolicy: "default"$'
hasnt default 'leader-elect-resource-name' 'tls-cipher-suites' '^kind: Role$' 'cert-manager' 'podAntiAffinity'

# The generated certificate chains to the generated CA and carries the Service names.
if command -v openssl >/dev/null; then
  field() { awk -v k="$1:" '$1==k {print $2; exit}' "$tmp/default.yaml" | base64 -d; }
  field tls.crt >"$tmp/tls.crt"; field ca.crt >"$tmp/ca.crt"
  if openssl verify -CAfile "$tmp/ca.crt" "$tmp/tls.crt" >"$tmp/verify.out" 2>&1; then
    ok "generated certificate verifies against its CA"
  else
    bad "generated certificate verifies against its CA" "$tmp/verify.out"
  fi
  sans=$(openssl x509 -in "$tmp/tls.crt" -noout -ext subjectAltName 2>/dev/null | tail -n +2)
  for san in DNS:rel-vgpu-sched DNS:rel-vgpu-sched.gpu-system DNS:rel-vgpu-sched.gpu-system.svc \
             DNS:rel-vgpu-sched.gpu-system.svc.cluster.local "IP Address:127.0.0.1"; do
    if grep -qF -- "$san" <<<"$sans"; then ok "generated SAN $san"; else bad "generated SAN $san"; fi
  done
  # The caBundle of the webhook is the CA of the Secret.
  cab=$(grep -E '^ +caBundle: ' "$tmp/default.yaml" | awk '{print $2}')
  cacrt=$(awk '$1=="ca.crt:" {print $2; exit}' "$tmp/default.yaml")
  if [ -n "$cab" ] && [ "$cab" = "$cacrt" ]; then ok "caBundle is the Secret's CA"; else bad "caBundle is the Secret's CA"; fi
fi

render ha --set replicas=2 --set certs.mode=existingSecret --set certs.existingSecret.name=my-tls \
  --set webhook.failurePolicy=Fail --set 'webhook.whitelistNamespaces={kube-system,monitoring}'
has ha 'replicas: 2$' 'leaderElect: true$' 'resourceLock: leases$' 'resourceName: hami-scheduler$' \
  'resourceNamespace: gpu-system$' 'leaseDuration: 15s$' 'renewDeadline: 10s$' 'retryPeriod: 1s$' \
  '- --leader-elect=true$' \
  '- --leader-elect-resource-name=hami-scheduler$' \
  '- --leader-elect-resource-namespace=gpu-system$' '^kind: Role$' \
  'resources: \["leases"\]$' 'verbs: \["get", "list", "watch"\]$' 'verbs: \["create"\]$' \
  'resourceNames: \["hami-scheduler"\]$' 'secretName: my-tls$' 'failurePolicy: Fail$' \
  'key: kubernetes.io/metadata.name$' '- monitoring$' 'podAntiAffinity:$'
hasnt ha '^kind: Secret$' 'caBundle:' 'cert-manager'

render certmanager --set certs.mode=certManager --set replicas=3 --set podDisruptionBudget.minAvailable=2
has certmanager '^kind: Certificate$' '^kind: Issuer$' 'selfSigned: \{\}$' 'isCA: true$' \
  'cert-manager.io/inject-ca-from: gpu-system/rel-vgpu-sched-serving$' \
  '- rel-vgpu-sched.gpu-system.svc$' '- rel-vgpu-sched.gpu-system.svc.cluster.local$' \
  'secretName: rel-vgpu-sched-tls$' 'minAvailable: 2$'
hasnt certmanager '^kind: Secret$' 'caBundle:' 'maxUnavailable'

render issuer --set certs.mode=certManager --set certs.certManager.issuerRef.name=corp-ca \
  --set certs.certManager.issuerRef.kind=ClusterIssuer
has issuer 'name: corp-ca$' 'kind: ClusterIssuer$'
hasnt issuer '^kind: Issuer$' 'selfSigned'

render custom --set extender.httpTimeout=45s --set scheduler.nodeLock.retryTimeout=40s \
  --set schedulerName=gpu-sched --set scheduler.port=9443 --set devConfig.gpuCorePolicy=force \
  --set-string devConfig.resourceCountName=example.com/vgpu --set kubeScheduler.image.tag=v1.30.5 \
  --set scheduler.bindQueue.saturation=0.5 --set scheduler.nodeSchedulerPolicy=fragmentation
has custom 'httpTimeout: 45s$' '- --node-lock-retry-timeout=40s$' 'schedulerName: gpu-sched$' \
  '- --bind-queue-saturation=0.5$' '- --node-scheduler-policy=fragmentation$' \
  '- --scheduler-name=gpu-sched$' 'urlPrefix: https://127.0.0.1:9443$' 'containerPort: 9443$' \
  'gpuCorePolicy: "force"$' '- name: example.com/vgpu$' 'resourceCountName: "example.com/vgpu"$' \
  'kube-scheduler:v1.30.5$'

render tls --set scheduler.tls.minVersion=VersionTLS13 \
  --set 'scheduler.tls.cipherSuites={TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}'
has tls '- --tls-min-version=VersionTLS13$' \
  '- --tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384$'

render minute --set scheduler.nodeLock.retryTimeout=1m
has minute 'httpTimeout: 62s$'

refuses bad-mode 'certs.mode "foo"' --set certs.mode=foo
refuses no-secret-name 'certs.existingSecret.name is required' --set certs.mode=existingSecret
refuses short-timeout 'must be longer than scheduler.nodeLock.retryTimeout' --set extender.httpTimeout=20s
refuses bad-duration 'duration "1.5s"' --set scheduler.nodeLock.retryTimeout=1.5s
refuses lease-order 'leaderElection: need 0 < retryPeriod (1s) < renewDeadline (20s) < leaseDuration (15s)' \
  --set replicas=2 --set leaderElection.renewDeadline=20s
render fastlease --set replicas=2 --set leaderElection.leaseDuration=8s \
  --set leaderElection.renewDeadline=6s --set leaderElection.retryPeriod=1s
has fastlease 'leaseDuration: 8s$' 'renewDeadline: 6s$' 'retryPeriod: 1s$'
refuses bad-policy 'webhook.failurePolicy "Maybe"' --set webhook.failurePolicy=Maybe
render verbmode --set scheduler.gpuPreemption=verb
has verbmode '- --gpu-preemption=verb$' 'resources: \["poddisruptionbudgets"\]$'
hasnt verbmode 'pods/eviction'
render offmode --set scheduler.gpuPreemption=off
hasnt offmode 'pods/eviction' 'poddisruptionbudgets'
# The pods without a GPU scored through /prioritize: a second entry, every node scored.
hasnt default 'prioritizeVerb' 'percentageOfNodesToScore'
# the dashboard: on by default, a Service port of its own (to the metrics listener)
has default '- --dashboard=true$' '- --dashboard-base-path=/$' "- --dashboard-frame-ancestors='none'$" \
  '- name: dashboard$' 'port: 80$'
render nodash --set scheduler.dashboard.enabled=false
has nodash '- --dashboard=false$'
hasnt nodash '- name: dashboard$' 'dashboard-base-path' 'port-forward'
render dashpath --set scheduler.dashboard.basePath=/gpu/ --set "scheduler.dashboard.frameAncestors='self'"
has dashpath '- --dashboard-base-path=/gpu/$' "- --dashboard-frame-ancestors='self'$"
# Vendors: HAMi's chart defaults (ascend and iluvatar off, the others on): their sections in the
# device config, their resources in managedResources, the --enable-* switches.
has default '- --enable-ascend=false$' '- --enable-iluvatar=false$' '^    hygon:$' \
  '^      resourceCountName: hygon.com/dcunum$' '^    vnpus:$' '^    iluvatars:$' \
  '^          - name: hygon.com/dcumem$' '^          - name: cambricon.com/vmlu$' \
  '^          - name: metax-tech.com/sgpu$' '^          - name: aws.amazon.com/neuroncore$'
hasnt default '^          - name: huawei.com/Ascend910B3$' '^          - name: iluvatar.ai/MR-V100-vgpu$' \
  '^          - name: cambricon.com/mlu.smlu.vmemory$' '^          - name: mthreads.com/sgpu-memory$'
render vendors --set devices.ascend.enabled=true --set devices.iluvatar.enabled=true \
  --set devices.hygon.enabled=false
has vendors '- --enable-ascend=true$' '- --enable-iluvatar=true$' \
  '^          - name: huawei.com/Ascend910B3-memory$' '^          - name: iluvatar.ai/BI-V100.vCore$'
hasnt vendors '^          - name: hygon.com/dcunum$'
render prio --set extender.prioritizeCpuPods=true --set extender.prioritizeWeight=150
has prio '^    percentageOfNodesToScore: 100$' '^        prioritizeVerb: prioritize$' \
  '^        weight: 150$' '^        ignorable: true$'

# HAMi allocations in DRA (scheduler.draMirror): off by default, nothing of it rendered but the
# flag; fence/share add the flags, the mirror namespace's Role, resourceclaims/binding and the
# post-delete sweep with its own RBAC.
has default '- --dra-mirror=off$'
hasnt default 'dra-mirror-namespace' 'resourceclaims/binding' 'resourceclaims/status' \
  'dra-mirror-sweep' 'post-delete'
render mirror --set scheduler.draMirror.mode=fence
has mirror '- --dra-mirror=fence$' '- --dra-mirror-namespace=gpu-system$' \
  'resources: \["resourceclaims/binding"\]$' 'resources: \["resourceclaims/status"\]$' \
  'verbs: \["get", "list", "watch", "create", "delete"\]$' 'name: rel-vgpu-sched-dra-mirror$' \
  'helm.sh/hook: post-delete$' '^kind: Job$' '- dra-mirror-sweep$' '- --namespace=gpu-system$' \
  'serviceAccountName: rel-vgpu-sched-dra-mirror-sweep$' 'verbs: \["get", "list", "delete"\]$'
render mirrorns --set scheduler.draMirror.mode=share --set scheduler.draMirror.namespace=gpu-mirrors
has mirrorns '- --dra-mirror=share$' '- --dra-mirror-namespace=gpu-mirrors$' \
  '^  namespace: gpu-mirrors$' '- --namespace=gpu-mirrors$'
refuses bad-mirror 'scheduler.draMirror.mode "on": want off, fence or share' \
  --set scheduler.draMirror.mode=on

echo "chart: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# The one-command demo on a fresh machine: installs what is missing, builds, makes local
# certificates, starts `vgpu-sched serve` on the embedded demo cluster (examples/
# demo-cluster.json, no Kubernetes needed), sends it a real AdmissionReview, Filter and Bind
# over HTTPS with curl and prints what happened, stops it, then runs the what-if simulation on
# examples/cluster.json + examples/pods.yaml and writes out/compare.svg: per-card memory and
# core allocation with binpack and with spread, side by side. On the way it prints the URL of the
# built-in dashboard and writes a screenshot of it, out/dashboard.png (headless chromium).
# --keep: leave the service running after the requests, for a person to look at the dashboard
# (Ctrl-C stops it); the what-if simulation then runs first.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0
for a in "$@"; do
  case $a in
    --keep) keep=1 ;;
    *) echo "usage: scripts/demo.sh [--keep]" >&2; exit 2 ;;
  esac
done
bash scripts/deps.sh
echo "== building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"${VS_JOBS:-2}" --target vgpu-sched >/dev/null
mkdir -p out
bash certs/gen-certs.sh --out out/certs >/dev/null

srv_out=out/serve.out srv_err=out/serve.log
build/vgpu-sched serve --cluster examples/demo-cluster.json --http_bind=127.0.0.1:0 \
  --metrics-bind-address=127.0.0.1:0 --cert_file=out/certs/tls.crt --key_file=out/certs/tls.key \
  --scheduler-name=hami-scheduler >"$srv_out" 2>"$srv_err" &
srv=$!
trap 'kill $srv 2>/dev/null || true; wait $srv 2>/dev/null || true' EXIT
port=""
for _ in $(seq 100); do
  port=$(sed -n 's/^listening on port \([0-9]*\)$/\1/p' "$srv_out" 2>/dev/null || true)
  [ -n "$port" ] && break
  kill -0 $srv 2>/dev/null || { cat "$srv_err"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "server did not start"; cat "$srv_err"; exit 1; }
mport=$(sed -n 's/.*event=serving .*metrics_port=\([0-9]*\).*/\1/p' "$srv_err")
url=https://127.0.0.1:$port
for _ in $(seq 50); do
  curl -sf --cacert out/certs/ca.crt "$url/readyz" >/dev/null && break
  sleep 0.1
done
echo "== vgpu-sched serving the embedded demo cluster on $url (metrics on :$mport)"
post() { curl -sS --cacert out/certs/ca.crt -H 'Content-Type: application/json' --data-binary @- "$url$1"; }

# Requests are built from the demo cluster file, as kube-scheduler and the apiserver would send them.
python3 - examples/demo-cluster.json out <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
pods = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in items if p["kind"] == "Pod"}
nodes = [n["metadata"]["name"] for n in items if n["kind"] == "Node"]
out = sys.argv[2]
for name in ("llm-7b", "too-big", "mig-small"):
    json.dump({"Pod": pods[("demo", name)], "Nodes": None, "NodeNames": nodes},
              open(f"{out}/filter-{name}.json", "w"))
new_pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "notebook", "namespace": "demo"},
           "spec": {"schedulerName": "default-scheduler",
                    "containers": [{"name": "jupyter", "image": "jupyter/scipy-notebook",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
json.dump({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
           "request": {"uid": "3f6e2c1a-demo", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                       "resource": {"group": "", "version": "v1", "resource": "pods"},
                       "namespace": "demo", "operation": "CREATE", "object": new_pod}},
          open(f"{out}/admission.json", "w"))
PY

cat > out/show.py <<'PY'
import base64, json, sys
label = sys.argv[1]
r = json.load(sys.stdin)
if "response" in r:
    resp = r["response"]
    print(f"  allowed={resp['allowed']}")
    if resp.get("patch"):
        for op in json.loads(base64.b64decode(resp["patch"])):
            print(f"  patch: {op['op']} {op['path']} = {json.dumps(op.get('value'))}")
elif label == "filter":
    if r.get("NodeNames"):
        print(f"  chosen node: {r['NodeNames'][0]}")
    for n, why in sorted((r.get("FailedNodes") or {}).items()):
        print(f"  {n}: {why}")
    if r.get("Error"):
        print(f"  error: {r['Error']}")
else:
    print("  bound" if not r.get("Error") else f"  error: {r['Error']}")
PY
show() { python3 out/show.py "$1"; }

echo
echo "== AdmissionReview for a new pod demo/notebook asking for nvidia.com/gpu: 1"
post /webhook < out/admission.json | show webhook
echo
echo "== Filter demo/llm-7b (1 GPU, 16000 MiB, 30% cores) over gpu-a100, gpu-t4, gpu-mig"
post /filter < out/filter-llm-7b.json | show filter
sleep 0.3   # the pod patch is written asynchronously; Bind waits for it anyway
uid=$(python3 -c 'import json;print(json.load(open("out/filter-llm-7b.json"))["Pod"]["metadata"].get("uid",""))')
echo "== Bind demo/llm-7b to gpu-a100 (node lock, bind-phase, binding)"
printf '{"PodName":"llm-7b","PodNamespace":"demo","PodUID":"%s","Node":"gpu-a100"}' "$uid" | post /bind | show bind
echo
echo "== Filter demo/mig-small (nvidia.com/vgpu-mode: mig, 4000 MiB)"
post /filter < out/filter-mig-small.json | show filter
echo
echo "== Filter demo/too-big (60000 MiB on one card)"
post /filter < out/filter-too-big.json | show filter
echo
echo "== per-card allocation now (Prometheus, hami_gpu_memory_allocated_bytes in MiB)"
curl -s "http://127.0.0.1:$mport/metrics" | python3 -c '
import re, sys
for line in sys.stdin:
    m = re.match(r"hami_gpu_memory_allocated_bytes\{node=\"([^\"]+)\",device_uuid=\"([^\"]+)\".*\} (\d+)", line)
    if m:
        print(f"  {m.group(1):10} {m.group(2):12} {int(m.group(3)) // 1048576:>6} MiB")'
dash="http://127.0.0.1:$mport/"
echo
echo "== the dashboard: $dash"
# A screenshot of it, by headless chromium (installed with the Node packages of the browser tests).
if bash scripts/deps.sh --with-browser >/dev/null 2>&1 &&
   (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error >/dev/null 2>&1) &&
   node tests/browser/screenshots.mjs --url "$dash" out cluster >/dev/null 2>out/screenshot.log; then
  echo "   screenshot of its cluster map: out/dashboard.png"
else
  echo "   (no screenshot: headless chromium is not available here, see out/screenshot.log)"
fi
if [ $keep = 1 ]; then
  echo
  echo "== vgpu-sched keeps serving the demo cluster: open $dash (Ctrl-C stops it)"
  trap 'kill $srv 2>/dev/null || true' INT TERM
  wait $srv 2>/dev/null || true
  trap - EXIT
  echo "== server stopped"
  exit 0
fi
kill $srv; wait $srv 2>/dev/null || true
trap - EXIT
echo "== server stopped"
echo
echo "== what-if: examples/cluster.json + examples/pods.yaml (node binpack / card spread)"
build/vgpu-sched simulate --cluster examples/cluster.json --pods examples/pods.yaml \
  --svg out/binpack.svg
echo
echo "== the same with node spread / card binpack"
build/vgpu-sched simulate --cluster examples/cluster.json --pods examples/pods.yaml \
  --node-scheduler-policy spread --gpu-scheduler-policy binpack --svg out/spread.svg | tail -4
python3 - out/binpack.svg out/spread.svg out/compare.svg <<'PY'
import re, sys
parts, width, height = [], 0, 0
for path in sys.argv[1:3]:
    svg = open(path).read()
    w = int(re.search(r'width="(\d+)"', svg).group(1)); h = int(re.search(r'height="(\d+)"', svg).group(1))
    body = svg[svg.index(">") + 1: svg.rindex("</svg>")]
    parts.append(f'<svg x="{width}" y="0" width="{w}" height="{h}">{body}</svg>')
    width += w; height = max(height, h)
open(sys.argv[3], "w").write(f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">'
                             + "".join(parts) + "</svg>\n")
PY
echo
echo "SVG of per-card allocation, binpack and spread side by side: out/compare.svg"

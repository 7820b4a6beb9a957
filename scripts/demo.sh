#!/usr/bin/env bash
# The one-command demo: installs what is missing, builds, and runs the what-if simulation on the
# example cluster with binpack and with spread, writing SVGs of per-card allocation.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"${VS_JOBS:-2}" >/dev/null
mkdir -p out
echo "== what-if: examples/cluster.json + examples/pods.yaml, node binpack / card spread"
build/vgpu-sched simulate --cluster examples/cluster.json --pods examples/pods.yaml \
  --svg out/binpack.svg
echo
echo "== the same with node spread / card binpack"
build/vgpu-sched simulate --cluster examples/cluster.json --pods examples/pods.yaml \
  --node-scheduler-policy spread --gpu-scheduler-policy binpack --svg out/spread.svg
echo
echo "SVGs: out/binpack.svg out/spread.svg"

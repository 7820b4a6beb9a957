#!/usr/bin/env python3
"""Writes a synthetic `vgpu-sched simulate` input at the scale of Alibaba's openb trace (1,213
nodes, 10,000 pods by default) to time simulate: nodes with 0-8 cards of four models and
cpu/memory/pods allocatable, pods that ask for GPU shares, whole GPUs or no GPU with cpu and
memory requests, so that the cluster fills up and the last pods are refused on every node.

    bench/simulate_input.py OUTDIR [--nodes N] [--pods N] [--seed S]
    time build/vgpu-sched simulate --cluster OUTDIR/cluster.json --pods OUTDIR/pods.json \\
        --output json --reasons summary >/dev/null

Synthetic data only (no trace records); deterministic for a seed."""
import argparse
import json
import os
import random

MODELS = [("NVIDIA-A100-SXM4-80GB", 81920), ("NVIDIA-V100-SXM2-32GB", 32768),
          ("NVIDIA-T4", 15360), ("NVIDIA-P100", 16384)]


def node(i, rng):
    name = f"node-{i:04d}"
    ncards = rng.choice([0, 1, 2, 4, 8, 8, 8])
    model, mem = rng.choice(MODELS)
    cards = [{"id": f"GPU-{name}-{k}", "index": k, "count": 10, "devmem": mem, "devcore": 100,
              "type": model, "numa": k * 2 // max(ncards, 1), "mode": "hami-core",
              "health": True} for k in range(ncards)]
    cpu = rng.choice([32, 64, 96, 128])
    meta = {"name": name, "labels": {"kubernetes.io/hostname": name, "model": model}}
    if cards:
        meta["annotations"] = {"hami.io/node-nvidia-register":
                               json.dumps(cards, separators=(",", ":"))}
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta,
            "status": {"allocatable": {"cpu": str(cpu), "memory": f"{cpu * 4}Gi",
                                       "ephemeral-storage": "500Gi", "pods": "110"}}}


def pod(i, rng):
    kind = rng.random()
    limits = {}
    if kind < 0.55:  # a share of one card
        limits = {"nvidia.com/gpu": "1",
                  "nvidia.com/gpumem-percentage": str(rng.choice([10, 25, 30, 50, 75])),
                  "nvidia.com/gpucores": str(rng.choice([10, 25, 30, 50, 75]))}
    elif kind < 0.8:  # whole cards
        limits = {"nvidia.com/gpu": str(rng.choice([1, 1, 2, 4, 8]))}
    cpu = rng.choice(["500m", "1", "2", "4", "8", "16"])
    mem = rng.choice(["1Gi", "4Gi", "8Gi", "16Gi", "64Gi"])
    spec = {"containers": [{"name": "main", "resources": {"limits": limits,
                                                           "requests": {"cpu": cpu,
                                                                        "memory": mem}}}]}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"pod-{i:05d}", "namespace": "bench"}, "spec": spec}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--nodes", type=int, default=1213)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.outdir, exist_ok=True)
    with open(os.path.join(a.outdir, "cluster.json"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List",
                   "items": [node(i, rng) for i in range(a.nodes)]}, f)
    with open(os.path.join(a.outdir, "pods.json"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List",
                   "items": [pod(i, rng) for i in range(a.pods)]}, f)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Replays Alibaba's openb GPU trace (the data set of the FGD paper, Weng et al., ATC '23)
through `vgpu-sched simulate` and reports, per workload and policy, the share of the cluster's
GPUs allocated when the arrived GPU request reaches 100 % of the cluster's GPUs.

    bench/trace/openb.py TRACE_DIR [--bin build/vgpu-sched] [--workloads default,cpu250]
                         [--policies binpack,spread,fragmentation] [--seeds 42-51]
                         [--keep DIR] [--jobs N] [--cpu-pods kube|fragmentation]

TRACE_DIR holds openb_node_list_gpu_node.csv and openb_pod_list_<workload>.csv (the trace is
read from there and never copied). Protocol of the paper's artifact (FGD simulator):
- the cluster: every node of openb_node_list_gpu_node.csv, empty at the start;
- the workload: the pod list sorted by name; pods drawn at random (with replacement) are added
  until the total GPU request would pass 1.3 x the cluster's GPUs (or random pods removed while
  it is above), then the list is sorted by name again and shuffled, all with one seed;
- pods arrive one at a time and never leave;
- the metric: after every pod, arrived = GPU request of all pods so far (placed or not),
  allocated = GPU request of the placed pods, both in % of the cluster's GPUs; the value at
  100 % is the mean of `allocated` over the pods after which `arrived` rounds to 100 (to 99 to
  101 when none does), and the median of that over the seeds is reported.
Pods after the point where arrived passes 101 % cannot change the metric (no departures), so
they are not simulated.

The conversion to Kubernetes objects: a node gets its cards in hami.io/node-nvidia-register,
type `NVIDIA-<model>`, memory per model (MODEL_MEM_MIB below), 100 cores, `count` SLOTS (the
trace's smallest share is 5 %, so the slot count never binds), cpu/memory as
status.allocatable (pods: 1000, the trace has no pod limit). A pod asks for `gpu_milli / 10` %
of a card's cores and memory (`nvidia.com/gpucores`, `nvidia.com/gpumem-percentage`) on
`num_gpu` cards, its gpu_spec becomes `nvidia.com/use-gputype`, cpu/memory become requests.

Pods asking for no GPU are placed as `simulate --cpu-pods` says: `kube` (default) by
kube-scheduler's least-allocated scoring, `fragmentation` where the fragmentation measure grows
least (as FGD's simulator places them; a what-if of calling vgpu-sched for those pods too).
"""
import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

# GPU memory per model. G2 and G3 are undisclosed models; the trace gives no memory for them.
# Shares are percentages of a card, so the absolute numbers only set the scale.
MODEL_MEM_MIB = {
    "A10": 24576,
    "G2": 32768,
    "G3": 32768,
    "P100": 16384,
    "T4": 16384,
    "V100M16": 16384,
    "V100M32": 32768,
}
SLOTS = 20
TUNE_RATIO = 1.3

# The 17 workloads of the paper's artifact (experiments/run_scripts/generate_run_scripts.py).
WORKLOADS = [
    "default", "cpu050", "cpu100", "cpu200", "cpu250",
    "gpushare40", "gpushare60", "gpushare80", "gpushare100",
    "gpuspec10", "gpuspec20", "gpuspec25", "gpuspec33",
    "multigpu20", "multigpu30", "multigpu40", "multigpu50",
]

# The paper's medians at 100 % arrived (allocated % of GPUs, seeds 42-51), from its artifact's
# experiments/analysis/expected_results/analysis_allo_discrete.csv: FGD and BestFit (the best
# baseline on most workloads).
PAPER_FGD = {
    "default": 95.23, "cpu050": 95.00, "cpu100": 95.21, "cpu200": 94.82, "cpu250": 93.20,
    "gpushare40": 93.95, "gpushare60": 91.30, "gpushare80": 89.09, "gpushare100": 86.64,
    "gpuspec10": 94.70, "gpuspec20": 94.69, "gpuspec25": 93.92, "gpuspec33": 87.88,
    "multigpu20": 95.53, "multigpu30": 96.39, "multigpu40": 96.90, "multigpu50": 97.09,
}
PAPER_BESTFIT = {
    "default": 92.91, "cpu050": 93.58, "cpu100": 93.28, "cpu200": 92.15, "cpu250": 91.30,
    "gpushare40": 91.47, "gpushare60": 89.09, "gpushare80": 86.73, "gpushare100": 84.60,
    "gpuspec10": 93.12, "gpuspec20": 88.47, "gpuspec25": 85.70, "gpuspec33": 80.41,
    "multigpu20": 93.73, "multigpu30": 94.53, "multigpu40": 95.09, "multigpu50": 95.58,
}

# policy name -> (node policy, card policy)
POLICIES = {
    "binpack": ("binpack", "binpack"),
    "spread": ("spread", "spread"),
    "fragmentation": ("fragmentation", "fragmentation"),
}


def die(msg):
    print(f"openb.py: {msg}", file=sys.stderr)
    sys.exit(2)


def read_csv(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        die(f"{path}: {e.strerror}")


def to_int(row, key, path):
    try:
        return int(row[key])
    except (KeyError, ValueError, TypeError):
        die(f"{path}: row {row.get('name') or row.get('sn')}: bad {key} {row.get(key)!r}")


def load_nodes(tdir):
    path = os.path.join(tdir, "openb_node_list_gpu_node.csv")
    nodes = []
    for r in read_csv(path):
        gpus = to_int(r, "gpu", path)
        model = r.get("model", "")
        if gpus > 0 and model not in MODEL_MEM_MIB:
            die(f"{path}: node {r['sn']}: unknown GPU model {model!r}")
        nodes.append({"name": r["sn"], "cpu": to_int(r, "cpu_milli", path),
                      "mem": to_int(r, "memory_mib", path), "gpus": gpus, "model": model})
    if not nodes:
        die(f"{path}: no nodes")
    return nodes


def load_pods(tdir, workload):
    path = os.path.join(tdir, f"openb_pod_list_{workload}.csv")
    pods = []
    for r in read_csv(path):
        n, milli = to_int(r, "num_gpu", path), to_int(r, "gpu_milli", path)
        if n < 0 or milli < 0 or milli > 1000 or (n > 0 and milli % 10):
            die(f"{path}: pod {r['name']}: num_gpu {n} gpu_milli {milli} not representable")
        spec = r.get("gpu_spec", "") or ""
        pods.append({"name": r["name"], "cpu": to_int(r, "cpu_milli", path),
                     "mem": to_int(r, "memory_mib", path), "num": n,
                     "milli": milli if n > 0 else 0,
                     "spec": sorted(set(s for s in spec.split("|") if s))})
    if not pods:
        die(f"{path}: no pods")
    return pods


def total_milli(p):
    return p["num"] * p["milli"]


def workload_order(pods, cluster_milli, seed):
    """The paper's protocol: tune to 1.3 x the cluster's GPUs, sort by name, shuffle."""
    rng = random.Random(seed)
    base = sorted(pods, key=lambda p: p["name"])
    out = list(base)
    total = sum(total_milli(p) for p in out)
    target = TUNE_RATIO * cluster_milli
    if total > target:
        while total > target:
            p = out.pop(rng.randrange(len(out)))
            total -= total_milli(p)
    else:
        i = 0
        while True:
            p = dict(base[rng.randrange(len(base))])
            if total + total_milli(p) > target:
                break
            p["name"] = f"{p['name']}-tuned-{i}"
            out.append(p)
            total += total_milli(p)
            i += 1
    out.sort(key=lambda p: p["name"])
    rng.shuffle(out)
    return out


def node_obj(n):
    cards = [{"id": f"{n['name']}-gpu{i}", "index": i, "count": SLOTS,
              "devmem": MODEL_MEM_MIB[n["model"]], "devcore": 100,
              "type": f"NVIDIA-{n['model']}", "health": True} for i in range(n["gpus"])]
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": n["name"], "labels": {"kubernetes.io/hostname": n["name"]},
                         "annotations": {"hami.io/node-nvidia-register":
                                         json.dumps(cards, separators=(",", ":"))}},
            "status": {"allocatable": {"cpu": f"{n['cpu']}m", "memory": f"{n['mem']}Mi",
                                       "pods": "1000"},
                       "capacity": {"cpu": f"{n['cpu']}m", "memory": f"{n['mem']}Mi",
                                    "pods": "1000"}}}


def pod_obj(p):
    res = {"requests": {"cpu": f"{p['cpu']}m", "memory": f"{p['mem']}Mi"}}
    meta = {"name": p["name"], "namespace": "openb", "uid": f"uid-{p['name']}"}
    if p["num"] > 0:
        share = p["milli"] // 10
        res["limits"] = {"nvidia.com/gpu": str(p["num"]), "nvidia.com/gpucores": str(share),
                         "nvidia.com/gpumem-percentage": str(share)}
        if p["spec"]:
            meta["annotations"] = {"nvidia.com/use-gputype": ",".join(p["spec"])}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "main", "resources": res}]},
            "status": {"phase": "Pending"}}


def write_json(path, items):
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f,
                  separators=(",", ":"))


def cut_at(order, cluster_milli, pct):
    """The prefix of pods after which the arrived request can still round to <= pct %."""
    arrived = 0
    for i, p in enumerate(order):
        arrived += total_milli(p)
        if arrived * 100 / cluster_milli >= pct + 0.5 and total_milli(p) > 0:
            return order[: i + 1]
    return order


def metric(order, placed, cluster_milli, at=100):
    """Mean allocated % over the pods after which arrived % rounds to `at` (the artifact's
    merge_alloc_discrete.py; it widens to at +- 1 when no pod lands on `at`)."""
    arrived = alloc = 0
    rows = []
    for p in order:
        arrived += total_milli(p)
        if p["name"] in placed:
            alloc += total_milli(p)
        rows.append((round(arrived * 100 / cluster_milli), alloc * 100 / cluster_milli))
    sel = [a for r, a in rows if r == at] or [a for r, a in rows if abs(r - at) <= 1]
    return round(statistics.mean(sel), 2) if sel else None


def run_one(args, nodes_path, workload, pods, cluster_milli, policy, seed):
    order = cut_at(workload_order(pods, cluster_milli, seed), cluster_milli, 101)
    d = args.keep or tempfile.mkdtemp(prefix="openb-")
    pods_path = os.path.join(d, f"pods-{workload}-{seed}.json")
    if not os.path.exists(pods_path):
        write_json(pods_path + ".tmp", [pod_obj(p) for p in order])
        os.replace(pods_path + ".tmp", pods_path)
    npol, gpol = POLICIES[policy]
    cmd = [args.bin, "simulate", "--cluster", nodes_path, "--pods", pods_path,
           "--node-scheduler-policy", npol, "--gpu-scheduler-policy", gpol, "--output", "json",
           "--reasons", "summary"]
    if args.cpu_pods != "kube":
        cmd += ["--cpu-pods", args.cpu_pods]
    cmd += args.extra
    t0 = time.monotonic()
    pr = subprocess.run(cmd, capture_output=True)
    dt = time.monotonic() - t0
    if pr.returncode != 0:
        die(f"{' '.join(cmd)}: exit {pr.returncode}: {pr.stderr.decode()[:500]}")
    out = json.loads(pr.stdout)
    placed = {r["pod"].split("/", 1)[1] for r in out["results"] if r.get("node")}
    if not args.keep:
        os.unlink(pods_path)
        os.rmdir(d)
    return metric(order, placed, cluster_milli), dt, len(order)


def parse_seeds(s):
    out = []
    for part in s.split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace_dir")
    ap.add_argument("--bin", default="build/vgpu-sched")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--policies", default="binpack,spread,fragmentation")
    ap.add_argument("--seeds", default="42-51")
    ap.add_argument("--keep", help="write the simulate inputs into this directory and keep them")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="also print every run as a JSON line")
    ap.add_argument("--cpu-pods", choices=["kube", "fragmentation"], default="kube",
                    help="how simulate places the pods asking no GPU (simulate --cpu-pods)")
    ap.add_argument("extra", nargs="*", help="more simulate flags (after --)")
    args = ap.parse_args()
    seeds = parse_seeds(args.seeds)
    workloads = [w for w in args.workloads.split(",") if w]
    policies = [p for p in args.policies.split(",") if p]
    for p in policies:
        if p not in POLICIES:
            die(f"unknown policy {p!r} (want {', '.join(POLICIES)})")
    if not seeds:
        die("no seeds")
    nodes = load_nodes(args.trace_dir)
    cluster_milli = 1000 * sum(n["gpus"] for n in nodes)
    d = args.keep or tempfile.mkdtemp(prefix="openb-nodes-")
    os.makedirs(d, exist_ok=True)
    nodes_path = os.path.join(d, "nodes.json")
    write_json(nodes_path, [node_obj(n) for n in nodes])
    print(f"cluster: {len(nodes)} nodes, {cluster_milli // 1000} GPUs; seeds "
          f"{','.join(map(str, seeds))}; pods without GPU: {args.cpu_pods}; "
          f"allocated % of GPUs at 100 % arrived (median)")
    print(f"{'workload':<12} " + " ".join(f"{p:>14}" for p in policies) + f" {'FGD paper':>10} {'BestFit':>8}")
    for w in workloads:
        pods = load_pods(args.trace_dir, w)
        jobs = [(p, s) for p in policies for s in seeds]
        with ThreadPoolExecutor(max(1, args.jobs)) as ex:
            res = list(ex.map(lambda ps: run_one(args, nodes_path, w, pods, cluster_milli,
                                                 ps[0], ps[1]), jobs))
        cells = []
        for p in policies:
            vals = [r[0] for (pp, _), r in zip(jobs, res) if pp == p and r[0] is not None]
            secs = [r[1] for (pp, _), r in zip(jobs, res) if pp == p]
            med = statistics.median(vals) if vals else float("nan")
            cells.append(f"{med:8.2f} ({statistics.mean(secs):3.0f}s)")
            if args.json:
                for (pp, s), r in zip(jobs, res):
                    if pp == p:
                        print(json.dumps({"workload": w, "policy": p, "seed": s,
                                          "cpu_pods": args.cpu_pods,
                                          "alloc100": r[0], "seconds": round(r[1], 2),
                                          "pods": r[2]}))
        fgd, bf = PAPER_FGD.get(w), PAPER_BESTFIT.get(w)
        print(f"{w:<12} " + " ".join(f"{c:>14}" for c in cells) +
              f" {fgd if fgd is not None else '-':>10} {bf if bf is not None else '-':>8}",
              flush=True)
    if not args.keep:
        os.unlink(nodes_path)
        os.rmdir(d)


if __name__ == "__main__":
    main()

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// capacity: the end-to-end invariant of a GPU-sharing scheduler, checked from the API objects
// alone. For every pod that is bound (spec.nodeName set) and not terminal, its
// hami.io/vgpu-devices-allocated (hami-compat.md §1.7) is decoded and summed per card; no card
// may exceed its registered devmem, devcore or count (hami.io/node-nvidia-register, §1.1), every
// card named must be a card of the node the pod is bound to, hami.io/vgpu-node (annotation and
// label) must name that node, and a bound pod asking for nvidia.com/gpu must carry an allocation.
//
// With --metrics URL the per-card usage vgpu-sched reports (hami_gpu_memory_allocated_bytes,
// hami_gpu_core_allocated_ratio, hami_gpu_shared_count) must equal what the API objects say:
// after a restart this proves the new instance rebuilt its usage from the pod annotations. A card
// vgpu-sched reports that no node registers is a problem too (it counts usage on a card that is
// gone: a deleted node, a card dropped from a register annotation).
//
// --removed-cards UUID,...: cards deliberately dropped from their node's register annotation
// while pods held them (chaos-node). A bound pod may still name such a card (it keeps its
// allocation); that usage is not summed on any card and is listed as "onRemovedCards".

type card struct {
	node, uuid               string
	count, devmem, devcore   int64
	slots, mem, cores, npods int64
	mSlots, mMem, mCores     int64 // from --metrics
	mSeen                    bool
}

type capacityReport struct {
	Pods     int      `json:"pods"`
	Bound    int      `json:"bound"`
	Cards    int      `json:"cards"`
	CardsUse int      `json:"cardsUsed"`
	Mem      int64    `json:"memUsed"`
	MemTotal int64    `json:"memTotal"`
	Problems []string `json:"problems"`
	// pods per card named in --removed-cards that still hold an allocation on it
	OnRemoved map[string]int `json:"onRemovedCards,omitempty"`
}

func cmdCapacity(args []string) error {
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	metricsURL := fs.String("metrics", "", "vgpu-sched metrics URL whose per-card usage must match the API objects")
	table := fs.Bool("table", false, "print the per-card usage")
	refusedNS := fs.String("refused", "", "namespace whose unschedulable single-GPU pods must not fit on any card now (no leaked capacity)")
	removedList := fs.String("removed-cards", "", "comma list of card UUIDs removed from their node's register on purpose: pods may still name them")
	if err := fs.Parse(args); err != nil {
		return err
	}
	removed := map[string]bool{}
	for _, u := range strings.Split(*removedList, ",") {
		if u = strings.TrimSpace(u); u != "" {
			removed[u] = true
		}
	}
	cs, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	rep := capacityReport{Problems: []string{}}
	problem := func(f string, a ...any) { rep.Problems = append(rep.Problems, fmt.Sprintf(f, a...)) }

	cards := map[string]*card{} // by uuid
	var order []*card
	for i := range nodes.Items {
		n := &nodes.Items[i]
		reg, ok := n.Annotations[annoRegister]
		if !ok {
			continue
		}
		var devs []registerDevice
		if err := json.Unmarshal([]byte(reg), &devs); err != nil {
			problem("node %s: %s: %v", n.Name, annoRegister, err)
			continue
		}
		for _, d := range devs {
			c := &card{node: n.Name, uuid: d.ID, count: int64(d.Count), devmem: int64(d.Devmem), devcore: int64(d.Devcore)}
			if _, dup := cards[d.ID]; dup {
				problem("card %s registered twice", d.ID)
			}
			cards[d.ID] = c
			order = append(order, c)
			rep.MemTotal += c.devmem
		}
	}
	rep.Cards = len(order)

	for i := range pods.Items {
		p := &pods.Items[i]
		rep.Pods++
		key := p.Namespace + "/" + p.Name
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		alloc, has := p.Annotations[annoAllocated]
		if !has {
			if requestsGPU(p) {
				problem("pod %s bound to %s asks for %s but has no %s", key, p.Spec.NodeName, resourceGPU, annoAllocated)
			}
			continue
		}
		rep.Bound++
		if v := p.Annotations[annoVGPUNode]; v != p.Spec.NodeName {
			problem("pod %s bound to %s but annotation %s=%q", key, p.Spec.NodeName, annoVGPUNode, v)
		}
		if v := p.Labels[annoVGPUNode]; v != p.Spec.NodeName {
			problem("pod %s bound to %s but label %s=%q", key, p.Spec.NodeName, annoVGPUNode, v)
		}
		devs, err := decodeAllocated(alloc)
		if err != nil {
			problem("pod %s: %s %q: %v", key, annoAllocated, alloc, err)
			continue
		}
		if want := len(p.Spec.InitContainers) + len(p.Spec.Containers); len(devs) != want {
			problem("pod %s: %s %q has %d container entries, want %d", key, annoAllocated, alloc, len(devs), want)
		}
		seen := map[string]bool{}
		for _, ctr := range devs {
			for _, d := range ctr {
				c := cards[d.uuid]
				if c == nil && removed[d.uuid] {
					if rep.OnRemoved == nil {
						rep.OnRemoved = map[string]int{}
					}
					if !seen[d.uuid] {
						rep.OnRemoved[d.uuid]++
						seen[d.uuid] = true
					}
					continue
				}
				if c == nil {
					problem("pod %s: card %s is not registered on any node", key, d.uuid)
					continue
				}
				if c.node != p.Spec.NodeName {
					problem("pod %s bound to %s was given card %s of node %s", key, p.Spec.NodeName, d.uuid, c.node)
				}
				c.slots++
				c.mem += d.mem
				c.cores += d.cores
				if !seen[d.uuid] {
					c.npods++
					seen[d.uuid] = true
				}
			}
		}
	}

	if *metricsURL != "" {
		stray, err := readCardMetrics(ctx, *metricsURL, cards)
		if err != nil {
			return err
		}
		for _, s := range stray {
			problem("vgpu-sched reports card %s, which no node registers", s)
		}
	}
	for _, c := range order {
		if c.slots > 0 {
			rep.CardsUse++
		}
		rep.Mem += c.mem
		if c.mem > c.devmem {
			problem("card %s on %s: memory %d MiB > devmem %d", c.uuid, c.node, c.mem, c.devmem)
		}
		if c.cores > c.devcore {
			problem("card %s on %s: cores %d > devcore %d", c.uuid, c.node, c.cores, c.devcore)
		}
		if c.slots > c.count {
			problem("card %s on %s: %d containers > count %d", c.uuid, c.node, c.slots, c.count)
		}
		if *metricsURL != "" {
			switch {
			case !c.mSeen:
				problem("card %s on %s: not in vgpu-sched metrics", c.uuid, c.node)
			case c.mMem != c.mem || c.mCores != c.cores || c.mSlots != c.slots:
				problem("card %s on %s: vgpu-sched reports %d MiB/%d cores/%d slots, the bound pods use %d MiB/%d cores/%d slots",
					c.uuid, c.node, c.mMem, c.mCores, c.mSlots, c.mem, c.cores, c.slots)
			}
		}
	}
	if *refusedNS != "" {
		checkRefused(pods.Items, nodes.Items, *refusedNS, order, problem)
	}
	if *table {
		sort.SliceStable(order, func(i, j int) bool { return order[i].uuid < order[j].uuid })
		w := bufio.NewWriter(os.Stderr)
		fmt.Fprintf(w, "%-24s %-12s %14s %9s %7s\n", "card", "node", "mem MiB", "cores", "slots")
		for _, c := range order {
			fmt.Fprintf(w, "%-24s %-12s %6d/%-7d %4d/%-4d %3d/%-3d\n", c.uuid, c.node, c.mem, c.devmem,
				c.cores, c.devcore, c.slots, c.count)
		}
		w.Flush()
	}
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
	if len(rep.Problems) > 0 {
		for _, p := range rep.Problems {
			fmt.Fprintln(os.Stderr, "capacity: "+p)
		}
		return fmt.Errorf("%d problem(s)", len(rep.Problems))
	}
	return nil
}

// checkRefused: a pod kube-scheduler left unschedulable after the extender refused it must not
// fit anywhere given the usage of the bound pods; if it does, the scheduler counted capacity
// that no bound pod holds. Only plain pods are judged: one container, nvidia.com/gpu 1 with
// explicit gpumem and gpucores, no card selection annotations.
func checkRefused(pods []corev1.Pod, nodes []corev1.Node, ns string, cards []*card, problem func(string, ...any)) {
	labelsOf := map[string]map[string]string{}
	for i := range nodes {
		labelsOf[nodes[i].Name] = nodes[i].Labels
	}
	for i := range pods {
		p := &pods[i]
		if p.Namespace != ns || p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending || len(p.Spec.Containers) != 1 ||
			len(p.Spec.InitContainers) != 0 {
			continue
		}
		unsched := false
		for _, c := range p.Status.Conditions {
			unsched = unsched || (c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse &&
				c.Reason == corev1.PodReasonUnschedulable)
		}
		lim := p.Spec.Containers[0].Resources.Limits
		n, okN := lim[resourceGPU]
		m, okM := lim["nvidia.com/gpumem"]
		c, okC := lim["nvidia.com/gpucores"]
		if !unsched || !okN || !okM || !okC || n.Value() != 1 {
			continue
		}
		skip := false
		for k := range p.Annotations {
			skip = skip || strings.HasPrefix(k, "nvidia.com/") || strings.HasPrefix(k, "hami.io/gpu-")
		}
		if skip {
			continue
		}
		mem, cores := m.Value(), min(c.Value(), 100)
		for _, d := range cards {
			ok := true
			for k, v := range p.Spec.NodeSelector {
				ok = ok && labelsOf[d.node][k] == v
			}
			if !ok || d.slots >= d.count || d.devmem-d.mem < mem || d.devcore-d.cores < cores ||
				(d.devcore == 100 && cores == 100 && d.slots > 0) || (d.devcore != 0 && d.cores == d.devcore && cores == 0) {
				continue
			}
			problem("pod %s/%s (%d MiB, %d cores) was refused, but card %s on %s has %d MiB, %d cores and %d slots free",
				p.Namespace, p.Name, mem, cores, d.uuid, d.node, d.devmem-d.mem, d.devcore-d.cores, d.count-d.slots)
			break
		}
	}
}

type allocDev struct {
	uuid       string
	mem, cores int64
}

// decodeAllocated parses a container-device list (hami-compat.md §1.7) strictly: every
// container entry ends with ';', every device with ':', each device has 4 comma fields with the
// vendor word NVIDIA and non-negative integers.
func decodeAllocated(v string) ([][]allocDev, error) {
	if !strings.HasSuffix(v, ";") {
		return nil, fmt.Errorf("does not end with ';'")
	}
	entries := strings.Split(strings.TrimSuffix(v, ";"), ";")
	out := make([][]allocDev, 0, len(entries))
	for _, e := range entries {
		var ctr []allocDev
		if e != "" {
			if !strings.HasSuffix(e, ":") {
				return nil, fmt.Errorf("entry %q does not end with ':'", e)
			}
			for _, d := range strings.Split(strings.TrimSuffix(e, ":"), ":") {
				f := strings.Split(d, ",")
				if len(f) != 4 || f[0] == "" || f[1] != "NVIDIA" {
					return nil, fmt.Errorf("device %q: want uuid,NVIDIA,mem,cores", d)
				}
				mem, err1 := strconv.ParseInt(f[2], 10, 32)
				cores, err2 := strconv.ParseInt(f[3], 10, 32)
				if err1 != nil || err2 != nil || mem < 0 || cores < 0 {
					return nil, fmt.Errorf("device %q: bad numbers", d)
				}
				ctr = append(ctr, allocDev{uuid: f[0], mem: mem, cores: cores})
			}
		}
		out = append(out, ctr)
	}
	return out, nil
}

// readCardMetrics fills the m* fields of cards from vgpu-sched's Prometheus text and returns the
// cards ("node/uuid") it reports that are not in cards.
func readCardMetrics(ctx context.Context, url string, cards map[string]*card) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics: %s", resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var stray []string
	for _, line := range strings.Split(string(body), "\n") {
		name, labels, value, ok := parseSample(line)
		if !ok {
			continue
		}
		c := cards[labels["device_uuid"]]
		if c == nil || labels["node"] != c.node {
			if name == "hami_gpu_memory_allocated_bytes" && labels["device_uuid"] != "" {
				stray = append(stray, labels["node"]+"/"+labels["device_uuid"])
			}
			continue
		}
		switch name {
		case "hami_gpu_memory_allocated_bytes":
			c.mMem, c.mSeen = int64(value)/(1<<20), true
		case "hami_gpu_core_allocated_ratio":
			c.mCores = int64(value)
		case "hami_gpu_shared_count":
			c.mSlots = int64(value)
		}
	}
	return stray, nil
}

// parseSample parses `name{k="v",...} value` (no escapes needed for our label values).
func parseSample(line string) (string, map[string]string, float64, bool) {
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	open := strings.IndexByte(line, '{')
	close := strings.LastIndexByte(line, '}')
	if open < 0 || close < open {
		return "", nil, 0, false
	}
	labels := map[string]string{}
	for _, kv := range strings.Split(line[open+1:close], ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			labels[k] = strings.Trim(v, `"`)
		}
	}
	val, err := strconv.ParseFloat(strings.TrimSpace(line[close+1:]), 64)
	if err != nil {
		return "", nil, 0, false
	}
	return line[:open], labels, val, true
}

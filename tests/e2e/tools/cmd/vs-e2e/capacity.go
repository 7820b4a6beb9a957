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
// alone. For every pod that is bound (spec.nodeName set) and not terminal, each vendor's
// allocated list (hami.io/vgpu-devices-allocated, hami.io/dcu-devices-allocated,
// hami.io/<Ascend word>-devices-allocated; hami-compat.md §1.7) is decoded and summed per card;
// no card may exceed its registered devmem, devcore or count (hami.io/node-nvidia-register,
// hami.io/node-dcu-register, hami.io/node-register-<word>), every card named must be a card of
// that vendor on the node the pod is bound to, hami.io/vgpu-node (annotation and label) must
// name that node, and a bound pod asking for devices must carry an allocation.
//
// --handed-off: every bound pod with an allocation was handed off by its device plugins
// (bind-phase=success, every to-allocate list consumed to empty entries).
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
	node, uuid, word         string
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
	handedOff := fs.Bool("handed-off", false, "every bound pod with an allocation has bind-phase=success and its to-allocate lists consumed")
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
		devs, bad := nodeCards(n)
		for _, b := range bad {
			problem("%s", b)
		}
		for _, d := range devs {
			c := &card{node: n.Name, uuid: d.uuid, word: d.word, count: d.count, devmem: d.devmem, devcore: d.devcore}
			if _, dup := cards[d.uuid]; dup {
				problem("card %s registered twice", d.uuid)
			}
			cards[d.uuid] = c
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
		lists := podDeviceLists(p, false)
		if len(lists) == 0 {
			if requestsDevice(p) {
				problem("pod %s bound to %s asks for devices but has no allocated list", key, p.Spec.NodeName)
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
		if *handedOff {
			if v := p.Annotations[annoBindPhase]; v != "success" {
				problem("pod %s: %s=%q, want success", key, annoBindPhase, v)
			}
			for _, l := range podDeviceLists(p, true) {
				if strings.Trim(l.value, ";") != "" {
					problem("pod %s: %s=%q not consumed by the device plugin", key, l.key, l.value)
				}
			}
		}
		seen := map[string]bool{}
		for _, l := range lists {
			devs, err := decodeAllocated(l.value, l.word)
			if err != nil {
				problem("pod %s: %s %q: %v", key, l.key, l.value, err)
				continue
			}
			if want := len(p.Spec.InitContainers) + len(p.Spec.Containers); len(devs) != want {
				problem("pod %s: %s %q has %d container entries, want %d", key, l.key, l.value, len(devs), want)
			}
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
					if c.word != l.word {
						problem("pod %s: %s names card %s, a %s card", key, l.key, d.uuid, c.word)
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
// that no bound pod holds. Only plain pods are judged: one container asking one device of one
// vendor with explicit memory, no card selection annotations — nvidia.com/gpu 1 with gpumem and
// gpucores; hygon.com/dcunum 1 with dcumem (dcucores, else 100); huawei.com/<word> 1 with
// <word>-memory (template mode: no cores).
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
		word, mem, cores, ok := plainRequest(p.Spec.Containers[0].Resources.Limits)
		if !unsched || !ok {
			continue
		}
		skip := false
		for k := range p.Annotations {
			skip = skip || strings.HasPrefix(k, "nvidia.com/") || strings.HasPrefix(k, "hami.io/gpu-") ||
				strings.HasPrefix(k, "hygon.com/") || strings.HasPrefix(k, "huawei.com/") ||
				strings.HasPrefix(k, "hami.io/use-") || strings.HasPrefix(k, "hami.io/no-use-")
		}
		if skip {
			continue
		}
		for _, d := range cards {
			ok := d.word == word
			for k, v := range p.Spec.NodeSelector {
				ok = ok && labelsOf[d.node][k] == v
			}
			if !ok || d.slots >= d.count || d.devmem-d.mem < mem || d.devcore-d.cores < cores ||
				(d.devcore == 100 && cores == 100 && d.slots > 0) || (d.devcore != 0 && d.cores == d.devcore && cores == 0) {
				continue
			}
			problem("pod %s/%s (%s, %d MiB, %d cores) was refused, but card %s on %s has %d MiB, %d cores and %d slots free",
				p.Namespace, p.Name, word, mem, cores, d.uuid, d.node, d.devmem-d.mem, d.devcore-d.cores, d.count-d.slots)
			break
		}
	}
}

// plainRequest: the vendor word, memory and cores of a plain one-device request (see
// checkRefused), ok false for anything else.
func plainRequest(lim corev1.ResourceList) (string, int64, int64, bool) {
	one := func(name string) bool { q, ok := lim[corev1.ResourceName(name)]; return ok && q.Value() == 1 }
	val := func(name string) (int64, bool) { q, ok := lim[corev1.ResourceName(name)]; return q.Value(), ok }
	var words []string
	for k, q := range lim {
		if deviceResource(k) && !q.IsZero() {
			words = append(words, string(k))
		}
	}
	if len(words) != 1 {
		return "", 0, 0, false
	}
	switch res := words[0]; {
	case res == resourceGPU:
		m, okM := val("nvidia.com/gpumem")
		c, okC := val("nvidia.com/gpucores")
		return "NVIDIA", m, min(c, 100), one(res) && okM && okC
	case res == resourceDCU:
		m, okM := val("hygon.com/dcumem")
		c, okC := val("hygon.com/dcucores")
		if !okC {
			c = 100
		}
		return "DCU", m, min(c, 100), one(res) && okM
	default:
		m, okM := val(res + "-memory")
		c, okC := val(res + "-core")
		return strings.TrimPrefix(res, "huawei.com/"), m, 0, one(res) && okM && (!okC || c == 0)
	}
}

type allocDev struct {
	uuid       string
	mem, cores int64
}

// decodeAllocated parses a container-device list (hami-compat.md §1.7) strictly: every
// container entry ends with ';', every device with ':', each device has 4 comma fields with the
// vendor word (NVIDIA, DCU, the Ascend chip's) and non-negative integers.
func decodeAllocated(v, word string) ([][]allocDev, error) {
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
				if len(f) != 4 || f[0] == "" || f[1] != word {
					return nil, fmt.Errorf("device %q: want uuid,%s,mem,cores", d, word)
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

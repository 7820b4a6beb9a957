package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// registerDevice is one element of hami.io/node-nvidia-register, with HAMi's key spellings,
// order and omitempty rules (hami-compat.md §1.1).
type registerDevice struct {
	ID      string `json:"id,omitempty"`
	Index   uint   `json:"index,omitempty"`
	Count   int32  `json:"count,omitempty"`
	Devmem  int32  `json:"devmem,omitempty"`
	Devcore int32  `json:"devcore,omitempty"`
	Type    string `json:"type,omitempty"`
	Numa    int    `json:"numa,omitempty"`
	Mode    string `json:"mode,omitempty"`
	Health  bool   `json:"health,omitempty"`
}

type labelFlags map[string]string

func (l labelFlags) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	l[k] = v
	return nil
}

type nodeOpts struct {
	cards, split, devmem, devcore, numa int
	gpuType, mode, register, unhealthy  string
	noGPU                               bool
	cpu, memory, pods, kubeletVersion   string
	labels, annotations                 labelFlags
	vendors                             []string // nvidia, ascend, dcu (vendors.go)
	word, dcuType                       string   // Ascend chip word, DCU model
	vnpuCore                            bool     // Ascend: hami-vnpu-core annotation "true"
}

func cmdNodes(args []string) error {
	fs := flag.NewFlagSet("nodes", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	o := nodeOpts{labels: labelFlags{}, annotations: labelFlags{}}
	fs.IntVar(&o.cards, "cards", 2, "GPUs per node")
	fs.IntVar(&o.split, "split", 10, "register 'count' per card (deviceSplitCount)")
	fs.IntVar(&o.devmem, "devmem", 16384, "register 'devmem' per card, MiB")
	fs.IntVar(&o.devcore, "devcore", 100, "register 'devcore' per card")
	fs.IntVar(&o.numa, "numa", 1, "NUMA nodes; cards are spread over them in index order")
	fs.StringVar(&o.gpuType, "type", "NVIDIA-Tesla T4", "register 'type' (model)")
	fs.StringVar(&o.mode, "mode", "hami-core", "register 'mode'")
	fs.StringVar(&o.unhealthy, "unhealthy", "", "comma list of card indexes registered unhealthy")
	fs.StringVar(&o.register, "register", "", "raw hami.io/node-nvidia-register value (overrides the card flags; {node} is replaced by the node name)")
	fs.BoolVar(&o.noGPU, "no-gpu", false, "a node without GPUs: no register annotation, no nvidia.com/gpu")
	fs.StringVar(&o.cpu, "cpu", "32", "capacity cpu")
	fs.StringVar(&o.memory, "memory", "256Gi", "capacity memory")
	fs.StringVar(&o.pods, "pods", "110", "capacity pods")
	fs.StringVar(&o.kubeletVersion, "kubelet-version", "v1.36.3", "status.nodeInfo.kubeletVersion")
	fs.Var(o.labels, "label", "extra node label KEY=VALUE (repeatable)")
	fs.Var(o.annotations, "annotation", "extra node annotation KEY=VALUE (repeatable)")
	vendors := fs.String("vendor", vendorNVIDIA, "comma list of the vendors whose cards the node carries, each with the card flags: nvidia (hami.io/node-nvidia-register), ascend (hami.io/node-register-<word>), dcu (hami.io/node-dcu-register)")
	fs.StringVar(&o.word, "word", "Ascend910B3", "--vendor ascend: the chip word (register key, card type, resource huawei.com/<word>)")
	fs.BoolVar(&o.vnpuCore, "vnpu-core", false, "--vendor ascend: the node runs hami-vnpu-core (annotation hami-vnpu-core)")
	fs.StringVar(&o.dcuType, "dcu-type", "DCU-K100_AI", "--vendor dcu: the card model (must contain DCU)")
	conc := fs.Int("concurrency", 1, "nodes created at once (e.g. 16 for a cluster of 1,000 nodes)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up on the whole set after this long")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: vs-e2e nodes [flags] NAME...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fmt.Errorf("no node names")
	}
	for _, v := range strings.Split(*vendors, ",") {
		if v = strings.TrimSpace(v); v != "" {
			o.vendors = append(o.vendors, v)
		}
	}
	cs, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	if *conc < 1 {
		return fmt.Errorf("--concurrency must be at least 1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	// Each node is written by one worker (create, then update and status update with retries on
	// conflict); the first error stops the others. Names are printed as their node is ready.
	work := make(chan string)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for i := 0; i < min(*conc, fs.NArg()); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				err := applyNode(ctx, cs, name, &o)
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("node %s: %w", name, err)
					cancel()
				} else if err == nil {
					fmt.Println(name)
				}
				mu.Unlock()
			}
		}()
	}
	for _, name := range fs.Args() {
		if ctx.Err() != nil {
			break
		}
		work <- name
	}
	close(work)
	wg.Wait()
	return first
}

func registerValue(name string, o *nodeOpts) (string, error) {
	if o.register != "" {
		return strings.ReplaceAll(o.register, "{node}", name), nil
	}
	bad, err := unhealthySet(o.unhealthy)
	if err != nil {
		return "", err
	}
	numa := max(o.numa, 1)
	devs := make([]registerDevice, 0, o.cards)
	for i := 0; i < o.cards; i++ {
		devs = append(devs, registerDevice{
			ID:      fmt.Sprintf("GPU-%s-%d", name, i),
			Index:   uint(i),
			Count:   int32(o.split),
			Devmem:  int32(o.devmem),
			Devcore: int32(o.devcore),
			Type:    o.gpuType,
			Numa:    i * numa / max(o.cards, 1),
			Mode:    o.mode,
			Health:  !bad[i],
		})
	}
	b, err := json.Marshal(devs)
	return string(b), err
}

// applyNode creates the node or brings an existing one to the wanted labels/annotations, removes
// the taints the TaintNodesByCondition admission plugin puts on new nodes (the node lifecycle
// controller would lift them; none runs here), and writes capacity and a Ready condition through
// the status subresource. No heartbeat is needed as no kube-controller-manager watches leases.
func applyNode(ctx context.Context, cs *kubernetes.Clientset, name string, o *nodeOpts) error {
	labels := map[string]string{
		"kubernetes.io/hostname": name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		labelFakeNode:            "true",
	}
	annos := map[string]string{}
	devCapacity := map[corev1.ResourceName]int64{}
	if !o.noGPU {
		labels["gpu"] = "on" // the HAMi device plugin DaemonSet's default nodeSelector
		for _, v := range o.vendors {
			regs, res, n, err := vendorRegister(v, name, o)
			if err != nil {
				return err
			}
			for k, val := range regs {
				annos[k] = val
			}
			devCapacity[res] = n
		}
	}
	for k, v := range o.labels {
		labels[k] = v
	}
	for k, v := range o.annotations {
		annos[k] = v
	}

	_, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annos},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		for k, v := range labels {
			n.Labels[k] = v
		}
		for k, v := range annos {
			n.Annotations[k] = v
		}
		if o.noGPU {
			delete(n.Annotations, annoRegister)
		}
		taints := n.Spec.Taints[:0]
		for _, t := range n.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
				taints = append(taints, t)
			}
		}
		n.Spec.Taints = taints
		_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}

	capacity := corev1.ResourceList{}
	for k, v := range map[corev1.ResourceName]string{
		corev1.ResourceCPU: o.cpu, corev1.ResourceMemory: o.memory, corev1.ResourcePods: o.pods,
		corev1.ResourceEphemeralStorage: "100Gi",
	} {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return fmt.Errorf("capacity %s: %w", k, err)
		}
		capacity[k] = q
	}
	for res, n := range devCapacity {
		// Each vendor's device plugin advertises cards × split virtual devices.
		capacity[res] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		n.Status.Capacity = capacity
		n.Status.Allocatable = capacity.DeepCopy()
		n.Status.Phase = corev1.NodeRunning
		cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason string) corev1.NodeCondition {
			return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: "vs-e2e fake node",
				LastHeartbeatTime: now, LastTransitionTime: now}
		}
		n.Status.Conditions = []corev1.NodeCondition{
			cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory"),
			cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure"),
			cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID"),
			cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady"),
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}}
		n.Status.NodeInfo = corev1.NodeSystemInfo{
			MachineID: name, SystemUUID: name, BootID: name,
			KernelVersion: "fake", OSImage: "vs-e2e fake node", ContainerRuntimeVersion: "fake://0",
			KubeletVersion: o.kubeletVersion, OperatingSystem: "linux", Architecture: "amd64",
		}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

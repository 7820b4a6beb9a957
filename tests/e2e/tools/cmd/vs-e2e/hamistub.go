package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// hamiStub binds the way HAMi's device plugin needs and does nothing more: no fitting, no
// scoring, no usage kept beyond a per-node card counter. It is the yardstick of the
// `baseline-floor` scenario: what any extender speaking HAMi's protocol costs a burst here.
//
// Per Bind (hami-compat.md §6): one allocation in flight per node (the plugin finds the pod to
// allocate as the owner of hami.io/mutex.lock); the lock taken with a merge patch of the node;
// the Binding carries bind-phase allocating, bind-time and the device lists (kube-apiserver
// copies a Binding's annotations onto the pod); the next Bind to the node goes once the pod
// watch shows this pod's bind-phase success or failed, replacing the lock as vgpu-sched's
// hand-over does (the plugin's own release is owner-checked). Cards are taken round-robin from
// the node's hami.io/node-nvidia-register: the scenario's pods always fit.
type hamiStub struct {
	cs    kubernetes.Interface
	pods  corelisters.PodLister
	nodes corelisters.NodeLister

	mu      sync.Mutex
	slots   map[string]*nodeSlot
	waiters map[types.UID]chan string
}

type nodeSlot struct {
	sync.Mutex
	next int // the card the next pod gets, modulo the node's cards
}

func startHamiStub(ctx context.Context, cs kubernetes.Interface) (*hamiStub, error) {
	factory := informers.NewSharedInformerFactory(cs, 0)
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	h := &hamiStub{cs: cs, pods: podInf.Lister(), nodes: nodeInf.Lister(),
		slots: map[string]*nodeSlot{}, waiters: map[types.UID]chan string{}}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				if ph := p.Annotations[annoBindPhase]; ph == "success" || ph == "failed" {
					h.wake(p.UID, ph)
				}
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				h.wake(p.UID, "deleted")
			}
		},
	}); err != nil {
		return nil, err
	}
	nodeInf.Informer()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	return h, nil
}

func (h *hamiStub) wake(uid types.UID, why string) {
	h.mu.Lock()
	ch := h.waiters[uid]
	delete(h.waiters, uid)
	h.mu.Unlock()
	if ch != nil {
		ch <- why // buffered: never blocks the informer
	}
}

func (h *hamiStub) slot(node string) *nodeSlot {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.slots[node]
	if s == nil {
		s = &nodeSlot{}
		h.slots[node] = s
	}
	return s
}

// podAsk: the gpumem and gpucores limits of the pod's first container that asks for a GPU.
func podAsk(p *corev1.Pod) (mem, cores int64, err error) {
	for _, c := range p.Spec.Containers {
		if _, ok := c.Resources.Limits[resourceGPU]; !ok {
			continue
		}
		m := c.Resources.Limits["nvidia.com/gpumem"]
		k := c.Resources.Limits["nvidia.com/gpucores"]
		return m.Value(), k.Value(), nil
	}
	return 0, 0, fmt.Errorf("pod %s/%s asks for no %s", p.Namespace, p.Name, resourceGPU)
}

func (h *hamiStub) bind(ctx context.Context, in stubBindArgs) error {
	pod, err := h.pods.Pods(in.PodNamespace).Get(in.PodName)
	if err != nil { // not in the cache yet: read it
		if pod, err = h.cs.CoreV1().Pods(in.PodNamespace).Get(ctx, in.PodName, metav1.GetOptions{}); err != nil {
			return err
		}
	}
	mem, cores, err := podAsk(pod)
	if err != nil {
		return err
	}
	node, err := h.nodes.Get(in.Node)
	if err != nil {
		return err
	}
	var cards []registerDevice
	if err := json.Unmarshal([]byte(node.Annotations[annoRegister]), &cards); err != nil || len(cards) == 0 {
		return fmt.Errorf("node %s: no cards in %s", in.Node, annoRegister)
	}
	s := h.slot(in.Node)
	s.Lock()
	defer s.Unlock()
	card := cards[s.next%len(cards)]
	s.next++
	devs := fmt.Sprintf("%s,NVIDIA,%d,%d:;", card.ID, mem, cores)

	ch := make(chan string, 1)
	h.mu.Lock()
	h.waiters[in.PodUID] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		if h.waiters[in.PodUID] == ch { // not a later Bind's of the same pod
			delete(h.waiters, in.PodUID)
		}
		h.mu.Unlock()
	}()
	lock := fmt.Sprintf("%s,%s,%s", time.Now().UTC().Format(time.RFC3339), in.PodNamespace, in.PodName)
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{annoNodeLock: lock}}})
	if _, err := h.cs.CoreV1().Nodes().Patch(ctx, in.Node, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("node lock: %w", err)
	}
	now := strconv.FormatInt(time.Now().Unix(), 10)
	err = h.cs.CoreV1().Pods(in.PodNamespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: in.PodName, Namespace: in.PodNamespace, UID: in.PodUID,
			Annotations: map[string]string{annoBindPhase: "allocating", "hami.io/bind-time": now,
				annoVGPUNode: in.Node, annoToAllocate: devs, annoAllocated: devs}},
		Target: corev1.ObjectReference{Kind: "Node", Name: in.Node},
	}, metav1.CreateOptions{})
	if err != nil { // the lock is this pod's: no allocation will release it
		unlock, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{annoNodeLock: nil}}})
		if _, uerr := h.cs.CoreV1().Nodes().Patch(ctx, in.Node, types.MergePatchType, unlock, metav1.PatchOptions{}); uerr != nil {
			return fmt.Errorf("binding: %w (and releasing the node lock: %v)", err, uerr)
		}
		return fmt.Errorf("binding: %w", err)
	}
	select {
	case <-ch: // handed off (or gone): the next Bind to this node may take the lock
		return nil
	case <-ctx.Done():
		return fmt.Errorf("no hand-off of %s/%s: %w", in.PodNamespace, in.PodName, ctx.Err())
	}
}

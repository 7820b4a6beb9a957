package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
)

// agent emulates, for pods bound to fake nodes, what a node would do:
//
//   - the HAMi device plugins' Allocate handoff (hami-compat.md §6.4, hami-vendors.md §1.10): a
//     pod with hami.io/bind-phase=allocating gets every entry of each vendor's to-allocate list
//     consumed (hami.io/vgpu-devices-to-allocate, hami.io/dcu-devices-to-allocate,
//     hami.io/<Ascend word>-devices-to-allocate; re-encoded empty, as each plugin writes it),
//     bind-phase=success, and the node's hami.io/mutex.lock — the lock all three vendors take —
//     released when it is this pod's (owner-checked like nodelock.go); one handoff for all the
//     pod's vendors, as the first plugin to finish sets success and releases the shared lock;
//   - the kubelet: such a pod then becomes Running through the status subresource (so it counts
//     as live usage); a pod whose allocation failed, or that asks for devices (nvidia.com/gpu,
//     hygon.com/dcunum, huawei.com/<word>) but was never handed off by a scheduler, becomes
//     Failed with UnexpectedAdmissionError as kubelet
//     would report; a pod being deleted is removed (grace period 0) once --terminate has passed
//     since the deletion request, at most its own grace period (default 0: at once), as a
//     kubelet removes it once its containers have stopped;
//   - injected device-plugin faults (--fail-rate, --delay-rate, --delay, --seed): a pod drawn
//     for "fail" gets what HAMi's plugin does on an Allocate error (bind-phase=failed, lock
//     released) and then, as kubelet reports an admission error, phase Failed; a pod drawn for
//     "delay" keeps the node lock --delay longer before its handoff. The draw is a hash of the
//     seed and the pod's namespace/name (pickFault), so it does not depend on the order the
//     pods arrive in, and `vs-e2e faults` can recompute it.
type agent struct {
	cs       *kubernetes.Clientset // informers and node-less work
	cfg      *rest.Config
	mu       sync.Mutex
	perNode  map[string]kubernetes.Interface
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	selector labels.Selector
	queue    workqueue.TypedRateLimitingInterface[string]
	hold     time.Duration
	term     time.Duration
	faults   faultOpts
}

func cmdAgent(args []string) error {
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	sel := fs.String("node-selector", labelFakeNode+"=true", "label selector of the nodes to emulate")
	resync := fs.Duration("resync", 5*time.Second, "re-examine all pods this often")
	hold := fs.Duration("hold", 0, "how long the emulated device plugin keeps the node lock (Allocate time) before it hands off and releases it")
	term := fs.Duration("terminate", 0, "how long a pod being deleted takes to terminate (at most its grace period) before the emulated kubelet removes it")
	workers := fs.Int("workers", 64, "pods handled at once (a real node has its own device plugin: holds on different nodes overlap)")
	var fo faultOpts
	fo.register(fs)
	delay := fs.Duration("delay", 0, "extra time an allocation drawn for delay (--delay-rate) keeps the node lock before its handoff")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := fo.validate(); err != nil {
		return err
	}
	if *delay < 0 {
		return fmt.Errorf("--delay must not be negative")
	}
	if fo.delayRate > 0 && *delay == 0 {
		return fmt.Errorf("--delay-rate needs --delay")
	}
	fo.delay = *delay
	if *workers < 1 {
		return fmt.Errorf("--workers must be at least 1")
	}
	if *term < 0 {
		return fmt.Errorf("--terminate must not be negative")
	}
	if *hold < 0 {
		return fmt.Errorf("--hold must not be negative")
	}
	selector, err := labels.Parse(*sel)
	if err != nil {
		return fmt.Errorf("--node-selector: %w", err)
	}
	cfg, err := newConfig(*kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	logger.SetPrefix("vs-e2e agent: ")

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	factory := informers.NewSharedInformerFactory(cs, *resync)
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	a := &agent{
		cs:       cs,
		cfg:      cfg,
		perNode:  map[string]kubernetes.Interface{},
		pods:     podInf.Lister(),
		nodes:    nodeInf.Lister(),
		selector: selector,
		hold:     *hold,
		term:     *term,
		faults:   fo,
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](
			100*time.Millisecond, 5*time.Second)),
	}
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			a.queue.Add(key)
		}
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	// A node turning fake (or being created after its pods) re-examines its pods.
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				a.enqueueNodePods(n.Name)
			}
		},
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	logger.Printf("running (nodes %s, hold %s, terminate %s, %d workers, faults: fail %g, delay %g by %s, seed %d)",
		selector, *hold, *term, *workers, fo.failRate, fo.delayRate, fo.delay, fo.seed)
	go func() {
		<-ctx.Done()
		a.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for i := 0; i < *workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a.next(ctx) {
			}
		}()
	}
	wg.Wait()
	logger.Printf("stopped")
	return nil
}

// node: the API client of one emulated node. A real node's kubelet and device plugin have
// their own clients and rate limits; one shared limiter for all nodes would make the e2e
// measure this tool (5–6 requests per GPU pod) instead of the scheduler.
func (a *agent) node(name string) kubernetes.Interface {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.perNode[name]; ok {
		return c
	}
	c, err := kubernetes.NewForConfig(a.cfg)
	if err != nil { // only a malformed config fails, and a.cs was made from the same one
		logger.Printf("client for node %s: %v (using the shared one)", name, err)
		return a.cs
	}
	a.perNode[name] = c
	return c
}

func (a *agent) enqueueNodePods(node string) {
	pods, err := a.pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pods {
		if p.Spec.NodeName == node {
			a.queue.Add(p.Namespace + "/" + p.Name)
		}
	}
}

func (a *agent) next(ctx context.Context) bool {
	key, quit := a.queue.Get()
	if quit {
		return false
	}
	defer a.queue.Done(key)
	if err := a.sync(ctx, key); err != nil {
		if ctx.Err() != nil {
			return true
		}
		logger.Printf("%s: %v (retrying)", key, err)
		a.queue.AddRateLimited(key)
		return true
	}
	a.queue.Forget(key)
	return true
}

// terminating: how much longer the pod being deleted keeps "running" (0: remove it now). The
// deletion was requested at deletionTimestamp - deletionGracePeriodSeconds; the containers stop
// --terminate later, or when the grace period ends if that is sooner.
func (a *agent) terminating(pod *corev1.Pod) time.Duration {
	if a.term <= 0 || pod.DeletionGracePeriodSeconds == nil {
		return 0
	}
	grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
	d := a.term
	if grace < d {
		d = grace
	}
	return time.Until(pod.DeletionTimestamp.Add(-grace).Add(d))
}

func (a *agent) isFake(node string) bool {
	if node == "" {
		return false
	}
	n, err := a.nodes.Get(node)
	return err == nil && a.selector.Matches(labels.Set(n.Labels))
}

// consumed re-encodes a device list the way the plugin leaves it once every container has been
// allocated: the entries split on ';' (the trailing empty one included), each emptied, each
// followed by ';' — "GPU-a,NVIDIA,3000,0:;" becomes ";;".
func consumed(v string) string {
	return strings.Repeat(";", len(strings.Split(v, ";")))
}

func (a *agent) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	// Decide on the informer's copy, as a kubelet and a device plugin watch their pods: every
	// change of the pod syncs it again, and each write below reads what it acts on (the plugin
	// reads the lock owner's pod, the kubelet's status manager the pod it updates), so a stale
	// copy costs at most one read, not a wrong write. No read per event or per resync.
	pod, err := a.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if !a.isFake(pod.Spec.NodeName) {
		return nil
	}
	cs := a.node(pod.Spec.NodeName)
	if pod.DeletionTimestamp != nil {
		if wait := a.terminating(pod); wait > 0 {
			a.queue.AddAfter(key, wait)
			return nil
		}
		zero := int64(0)
		err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err == nil {
			logger.Printf("%s: deleted (kubelet)", key)
		}
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	if pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "" {
		return nil
	}
	phase := pod.Annotations[annoBindPhase]
	switch {
	case phase == "allocating":
		return a.allocate(ctx, pod)
	case phase == "failed":
		return a.setPhase(ctx, pod, corev1.PodFailed, "UnexpectedAdmissionError",
			"Allocate failed due to hami.io/bind-phase=failed (vs-e2e)")
	case phase == "" && requestsDevice(pod):
		return a.setPhase(ctx, pod, corev1.PodFailed, "UnexpectedAdmissionError",
			"Allocate failed: pod requests devices but was never handed off (no hami.io/bind-phase) (vs-e2e)")
	default: // success, or a pod without GPUs
		return a.setPhase(ctx, pod, corev1.PodRunning, "", "")
	}
}

func (a *agent) allocate(ctx context.Context, pod *corev1.Pod) error {
	key := pod.Namespace + "/" + pod.Name
	mode := pod.Annotations[annoHandoff]
	if mode == "hold" {
		return nil
	}
	// HAMi's plugin finds the pod to allocate as the node lock's owner and reads it (GET); the
	// cached copy may be older than the handoff this agent already wrote.
	pod, err := a.node(pod.Spec.NodeName).CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if pod.DeletionTimestamp != nil || (pod.Status.Phase != corev1.PodPending && pod.Status.Phase != "") ||
		pod.Annotations[annoBindPhase] != "allocating" {
		return nil // handed off already, or no longer pending: its update syncs it again
	}
	wait := a.hold // Allocate takes this long on the node; the lock stays held meanwhile
	if mode == "" {
		switch a.faults.pick(pod.Namespace, pod.Name) {
		case faultFail:
			mode = "fail"
			logger.Printf("%s on %s: fault=fail (injected Allocate error)", key, pod.Spec.NodeName)
		case faultDelay:
			wait += a.faults.delay
			logger.Printf("%s on %s: fault=delay %s (injected)", key, pod.Spec.NodeName, a.faults.delay)
		}
	}
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Each vendor's plugin takes its list while it still names devices (its word in the type
	// field, as HAMi's plugin helper checks).
	patch := map[string]any{}
	var lists []string
	for _, l := range podDeviceLists(pod, true) {
		if !strings.Contains(l.value, l.word) {
			continue
		}
		lists = append(lists, l.value) // in key order: NVIDIA's alone reads as before
		if mode != "fail" {
			patch[l.key] = consumed(l.value)
		}
	}
	list := strings.Join(lists, " ")
	if mode == "fail" || len(lists) == 0 {
		patch[annoBindPhase] = "failed"
	} else {
		patch[annoBindPhase] = "success"
	}
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": patch}})
	if _, err := a.node(pod.Spec.NodeName).CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, body,
		metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch pod: %w", err)
	}
	logger.Printf("%s on %s: devices %q -> bind-phase=%s", key, pod.Spec.NodeName, list, patch[annoBindPhase])
	if err := a.releaseLock(ctx, pod); err != nil {
		return fmt.Errorf("release %s on %s: %w", annoNodeLock, pod.Spec.NodeName, err)
	}
	return nil // the patch triggers another sync, which sets the phase
}

// releaseLock removes hami.io/mutex.lock from the pod's node if this pod owns it (value
// "<time>,<ns>,<name>"; a legacy value without commas has no owner and is released too),
// with the node's resourceVersion as precondition, retrying on conflicts.
func (a *agent) releaseLock(ctx context.Context, pod *corev1.Pod) error {
	suffix := "," + pod.Namespace + "," + pod.Name
	return retry.OnError(retry.DefaultBackoff, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)
	}, func() error {
		n, err := a.node(pod.Spec.NodeName).CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		lock, ok := n.Annotations[annoNodeLock]
		if !ok {
			return nil
		}
		if strings.Contains(lock, ",") && !strings.HasSuffix(lock, suffix) {
			logger.Printf("%s/%s: lock on %s is not ours (%q), left alone", pod.Namespace, pod.Name, n.Name, lock)
			return nil
		}
		body, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"annotations":     map[string]any{annoNodeLock: nil},
			"resourceVersion": n.ResourceVersion,
		}})
		if _, err := a.node(pod.Spec.NodeName).CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, body,
			metav1.PatchOptions{}); err != nil {
			return err
		}
		logger.Printf("%s/%s: released %s on %s", pod.Namespace, pod.Name, annoNodeLock, n.Name)
		return nil
	})
}

// setPhase writes the status a kubelet would: Running with every container started and ready,
// or Failed at admission.
func (a *agent) setPhase(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, reason, msg string) error {
	key := pod.Namespace + "/" + pod.Name
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := a.node(pod.Spec.NodeName).CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != "" {
			return nil
		}
		now := metav1.Now()
		p.Status.Phase = phase
		p.Status.Reason = reason
		p.Status.Message = msg
		if p.Status.StartTime == nil {
			p.Status.StartTime = &now
		}
		if phase == corev1.PodRunning {
			for _, t := range []corev1.PodConditionType{corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
				setPodCondition(&p.Status, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
			}
			p.Status.InitContainerStatuses = nil
			for _, c := range p.Spec.InitContainers {
				p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
					Name: c.Name, Image: c.Image, ImageID: "fake://" + c.Image, ContainerID: "fake://" + string(p.UID) + "/" + c.Name,
					Ready: true, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
						ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}},
				})
			}
			p.Status.ContainerStatuses = nil
			started := true
			for _, c := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: c.Name, Image: c.Image, ImageID: "fake://" + c.Image, ContainerID: "fake://" + string(p.UID) + "/" + c.Name,
					Ready: true, Started: &started,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
				})
			}
		}
		_, err = a.node(pod.Spec.NodeName).CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil {
		logger.Printf("%s on %s: phase %s %s", key, pod.Spec.NodeName, phase, reason)
	}
	return err
}

func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// settle waits until every pod of a namespace has reached an end state of scheduling:
//
//   - bound: spec.nodeName set and phase Running (the agent's handoff completed), or
//   - refused: not bound, condition PodScheduled=False with reason Unschedulable, and at least
//     one FilteringFailed event (source hami-scheduler) for the pod;
//
//   - failed by the device plugin, with --allow-failed only: phase Failed, reason
//     UnexpectedAdmissionError and hami.io/bind-phase=failed (an Allocate error, as kubelet
//     reports it; counted in "failed");
//
// and kube-scheduler has nothing left to try (its scheduler_pending_pods gauges for the active
// and backoff queues are 0), all of it unchanged for --stable. Any other pod that fails (phase
// Failed or Succeeded) ends the wait with an error. Prints a JSON summary: "settled" is the time from the start
// (--started, else the call) until that state was first seen, "seconds" adds the --stable window;
// with --cpu-pids, "cpu" holds each process's CPU seconds (user + system) read when that state
// was first seen, so a caller that read them before the burst has the burst's own CPU without
// the stable window's.
//
// The pods and the FilteringFailed Events are watched (one LIST each, then a watch), so a state
// is seen when the API server sends it, not at the next poll, and the wait adds no load that
// grows with the Events of earlier bursts; only kube-scheduler's queue gauges are polled, every
// settleTick once no pod is waiting.

type settleSummary struct {
	Pods          int            `json:"pods"`
	Bound         int            `json:"bound"`
	Unschedulable int            `json:"unschedulable"`
	Failed        int            `json:"failed,omitempty"`
	Seconds       float64        `json:"seconds"`
	Settled       float64        `json:"settled"`
	Reasons       map[string]int `json:"reasons"`
	CPU           []float64      `json:"cpu,omitempty"`
}

// settleTick: how often the queue gauges are read and the --stable window checked.
const settleTick = 100 * time.Millisecond

func cmdSettle(args []string) error {
	fs := flag.NewFlagSet("settle", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	ns := fs.String("namespace", "default", "namespace of the pods")
	selector := fs.String("selector", "", "label selector of the pods")
	timeout := fs.Duration("timeout", 4*time.Minute, "give up after this long")
	stable := fs.Duration("stable", 3*time.Second, "the settled state must hold this long")
	started := fs.Float64("started", 0, "unix time (seconds, fractional) the clock starts at, e.g. when the pods were created (default: now)")
	allowFailed := fs.Bool("allow-failed", false, "a pod Failed by the device plugin (bind-phase=failed, UnexpectedAdmissionError) is an end state")
	schedURL := fs.String("scheduler-metrics", "", "kube-scheduler /metrics URL (client certificate of the kubeconfig; server certificate not verified)")
	cpuPids := fs.String("cpu-pids", "", "comma-separated PIDs whose CPU seconds are read when the settled state is first seen (\"cpu\" in the summary)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var pids []int
	if *cpuPids != "" {
		var err error
		if pids, err = parsePids(*cpuPids); err != nil {
			return fmt.Errorf("--cpu-pids: %w", err)
		}
	}
	cs, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	var schedClient *http.Client
	if *schedURL != "" {
		if schedClient, err = schedulerMetricsClient(*kubeconfig); err != nil {
			return err
		}
	}
	start := time.Now()
	if *started > 0 {
		start = time.Unix(0, int64(*started*1e9))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	w, err := watchSettle(ctx, cs, *ns, *selector)
	if err != nil {
		return err
	}
	var last string
	var since, polled time.Time
	var queues string
	var sum settleSummary
	var cpuAt []float64
	tick := time.NewTicker(settleTick)
	defer tick.Stop()
	for {
		sig, s, waiting, failed := settleState(w.pods.List(), w.events.List(), *allowFailed, false)
		if len(failed) > 0 {
			return fmt.Errorf("pods failed: %s", strings.Join(failed, "; "))
		}
		now := time.Now()
		if len(waiting) == 0 && schedClient != nil {
			// The gauges only matter once no pod is waiting; read at most once a tick.
			if now.Sub(polled) >= settleTick || queues == "" {
				q, err := pendingQueues(ctx, schedClient, *schedURL)
				if err != nil {
					if ctx.Err() == nil {
						logger.Printf("settle: %v (retrying)", err)
					}
					q = ""
				}
				queues, polled = q, time.Now()
			}
			switch {
			case queues == "":
				waiting = []string{"kube-scheduler queues unread"}
			case queues != "active=0 backoff=0":
				waiting = []string{"kube-scheduler queues " + queues}
			}
			sig += " " + queues
		} else {
			queues = ""
		}
		sum = s
		if len(waiting) == 0 {
			if sig != last {
				last, since = sig, now
				if cpuAt, err = procCPU(pids); err != nil {
					return fmt.Errorf("--cpu-pids: %w", err)
				}
			} else if now.Sub(since) >= *stable {
				sum.Seconds = float64(now.Sub(start).Milliseconds()) / 1000
				sum.Settled = float64(since.Sub(start).Milliseconds()) / 1000
				sum.CPU = cpuAt
				out, _ := json.Marshal(sum)
				fmt.Println(string(out))
				return nil
			}
		} else {
			last = ""
		}
		select {
		case <-ctx.Done():
			pending := waiting
			if len(waiting) > 0 && waiting[0] == settleSomeWaiting {
				_, _, pending, _ = settleState(w.pods.List(), w.events.List(), *allowFailed, true)
			}
			if len(pending) > 10 {
				pending = append(pending[:10], fmt.Sprintf("... %d more", len(pending)-10))
			}
			return fmt.Errorf("not settled after %v (%d bound, %d unschedulable): waiting for %s",
				*timeout, sum.Bound, sum.Unschedulable, strings.Join(pending, "; "))
		case <-w.changed:
		case <-tick.C:
		}
	}
}

// settleWatch: the caches of the watched pods and FilteringFailed Events; changed receives (at
// most one pending value) whenever either changes.
type settleWatch struct {
	pods, events cache.Store
	changed      chan struct{}
}

// watchSettle starts the watches of the pods of ns matching selector and of ns's
// FilteringFailed Events and returns once both have listed.
func watchSettle(ctx context.Context, cs kubeClient, ns, selector string) (*settleWatch, error) {
	w := &settleWatch{changed: make(chan struct{}, 1)}
	notify := func() {
		select {
		case w.changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	pods := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	events := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "reason=FilteringFailed" }))
	podInf := pods.Core().V1().Pods().Informer()
	evInf := events.Core().V1().Events().Informer()
	for _, inf := range []cache.SharedIndexInformer{podInf, evInf} {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	pods.Start(ctx.Done())
	events.Start(ctx.Done())
	for _, f := range []informers.SharedInformerFactory{pods, events} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return nil, fmt.Errorf("settle: the watch of %v did not sync: %v", typ, ctx.Err())
			}
		}
	}
	w.pods, w.events = podInf.GetStore(), evInf.GetStore()
	return w, nil
}

// settleSomeWaiting stands for the waiting pods when settleState is not asked to describe them.
const settleSomeWaiting = "pods (not described)"

// settleState classifies the pods. sig changes whenever any pod changes state; it is only built
// once no pod is waiting. waiting describes each waiting pod with detail, else it is
// [settleSomeWaiting] when any is (the caller classifies on every watch event: this keeps that
// cheap).
func settleState(podObjs, eventObjs []any, allowFailed, detail bool) (sig string, sum settleSummary, waiting, failed []string) {
	refused := map[string]bool{}
	for _, o := range eventObjs {
		e, ok := o.(*corev1.Event)
		if ok && (e.Source.Component == "hami-scheduler" || e.ReportingController == "hami-scheduler") {
			refused[string(e.InvolvedObject.UID)] = true
		}
	}
	sum.Reasons = map[string]int{}
	var states []string
	for _, o := range podObjs {
		p, ok := o.(*corev1.Pod)
		if !ok {
			continue
		}
		sum.Pods++
		state := "waiting"
		switch {
		case allowFailed && p.Status.Phase == corev1.PodFailed && p.Status.Reason == "UnexpectedAdmissionError" &&
			p.Annotations[annoBindPhase] == "failed":
			sum.Failed++
			state = "failed"
		case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			failed = append(failed, fmt.Sprintf("%s %s %s %s", p.Name, p.Status.Phase, p.Status.Reason, p.Status.Message))
			state = string(p.Status.Phase)
		case p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning:
			sum.Bound++
			state = "bound:" + p.Spec.NodeName
		case p.Spec.NodeName == "":
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse &&
					c.Reason == corev1.PodReasonUnschedulable && refused[string(p.UID)] {
					sum.Unschedulable++
					state = "unschedulable"
					for _, w := range reasonWords(c.Message) {
						sum.Reasons[w]++
					}
				}
			}
		}
		switch {
		case state == "waiting" && detail:
			waiting = append(waiting, fmt.Sprintf("%s (node %q, phase %s, bind-phase %q)", p.Name,
				p.Spec.NodeName, p.Status.Phase, p.Annotations[annoBindPhase]))
		case state == "waiting":
			waiting = []string{settleSomeWaiting}
		case len(waiting) == 0:
			states = append(states, p.Name+"="+state)
		}
	}
	if len(waiting) > 0 {
		sort.Strings(waiting)
		return
	}
	sort.Strings(states)
	sig = strings.Join(states, ",")
	return
}

// reasonWords returns the HAMi reason words (Card*, NodeInsufficientDevice, ...) in a message.
func reasonWords(msg string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(msg, func(r rune) bool { return strings.ContainsRune(" ,.;()", r) }) {
		if (strings.HasPrefix(f, "Card") || strings.HasPrefix(f, "Node") || f == "ExclusiveDeviceAllocateConflict" ||
			f == "AllocatedCardsInsufficientRequest" || f == "NumaNotFit" || f == "ResourceQuotaNotFit" ||
			f == "ModeNotFit") && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// schedulerMetricsClient: an HTTP client presenting the kubeconfig's client certificate
// (kube-scheduler authorizes /metrics through the API server) without verifying the
// scheduler's self-signed serving certificate.
func schedulerMetricsClient(kubeconfig string) (*http.Client, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Insecure = true
	cfg.CAData, cfg.CAFile = nil, ""
	cfg.Timeout = 10 * time.Second
	return rest.HTTPClientFor(cfg)
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = kubeconfigFromEnv()
	}
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}

// pendingQueues reads scheduler_pending_pods for the active and backoff queues.
func pendingQueues(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	q := map[string]float64{}
	found := false
	for _, line := range strings.Split(string(body), "\n") {
		name, labels, v, ok := parseSample(line)
		if ok && name == "scheduler_pending_pods" {
			q[labels["queue"]] = v
			found = true
		}
	}
	if !found {
		return "", fmt.Errorf("%s: no scheduler_pending_pods", url)
	}
	return fmt.Sprintf("active=%g backoff=%g", q["active"], q["backoff"]), nil
}

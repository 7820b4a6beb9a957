package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Device-plugin fault injection of the agent (chaos scenario chaos-agent) and its check.
//
// Each pod gets one draw u in [0,1) from a hash of the seed and "namespace/name": u < fail-rate
// means its Allocate fails, fail-rate <= u < fail-rate+delay-rate means its Allocate is delayed,
// anything else is a normal handoff. Hashing instead of a sequential generator keeps the draw
// independent of the order in which pods reach the agent (the workers run concurrently), so a
// run is reproducible and the check below can recompute exactly which pods were hit.

type fault int

const (
	faultNone fault = iota
	faultFail
	faultDelay
)

type faultOpts struct {
	failRate, delayRate float64
	delay               time.Duration
	seed                int64
}

func (o *faultOpts) register(fs *flag.FlagSet) {
	fs.Float64Var(&o.failRate, "fail-rate", 0, "fraction of allocations the emulated device plugin fails (bind-phase=failed, lock released, pod Failed)")
	fs.Float64Var(&o.delayRate, "delay-rate", 0, "fraction of allocations held --delay longer before the handoff")
	fs.Int64Var(&o.seed, "seed", 1, "seed of the fault draw (per pod: a hash of the seed and namespace/name)")
}

func (o *faultOpts) validate() error {
	if o.failRate < 0 || o.failRate > 1 {
		return fmt.Errorf("--fail-rate %g: want a fraction in [0, 1]", o.failRate)
	}
	if o.delayRate < 0 || o.delayRate > 1 {
		return fmt.Errorf("--delay-rate %g: want a fraction in [0, 1]", o.delayRate)
	}
	if o.failRate+o.delayRate > 1 {
		return fmt.Errorf("--fail-rate + --delay-rate = %g: a pod is failed or delayed, never both, so the sum must not exceed 1",
			o.failRate+o.delayRate)
	}
	return nil
}

// draw maps (seed, ns/name) to [0,1): FNV-1a of the seed's 8 bytes and the key, then the
// splitmix64 finalizer, top 53 bits.
func draw(seed int64, ns, name string) float64 {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	h.Write([]byte(ns + "/" + name))
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

func (o *faultOpts) pick(ns, name string) fault {
	if o.failRate == 0 && o.delayRate == 0 {
		return faultNone
	}
	u := draw(o.seed, ns, name)
	switch {
	case u < o.failRate:
		return faultFail
	case u < o.failRate+o.delayRate:
		return faultDelay
	}
	return faultNone
}

type faultReport struct {
	Pods        int      `json:"pods"`
	Bound       int      `json:"bound"`
	Failed      int      `json:"failed"`
	Delayed     int      `json:"delayed"`
	Running     int      `json:"running"`
	Unbound     int      `json:"unbound"`
	Drawn       [2]int   `json:"drawn"` // pods of the namespace drawn for fail, for delay (bound or not)
	DelayedPods []string `json:"delayedPods"`
}

// cmdFaults checks the outcome of a run with injected faults against the draw: every pod of the
// namespace that reached a node (spec.nodeName set) ended Failed with bind-phase=failed and
// reason UnexpectedAdmissionError exactly when it was drawn for "fail", and Running with
// bind-phase=success otherwise (delayed ones included). Prints a JSON summary; the names of the
// bound pods drawn for delay are listed so the caller can match them with the agent's log.
func cmdFaults(args []string) error {
	fs := flag.NewFlagSet("faults", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	ns := fs.String("namespace", "default", "namespace of the pods")
	var fo faultOpts
	fo.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := fo.validate(); err != nil {
		return err
	}
	cs, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pods, err := cs.CoreV1().Pods(*ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	rep := faultReport{DelayedPods: []string{}}
	var problems []string
	for i := range pods.Items {
		p := &pods.Items[i]
		rep.Pods++
		f := fo.pick(p.Namespace, p.Name)
		switch f {
		case faultFail:
			rep.Drawn[0]++
		case faultDelay:
			rep.Drawn[1]++
		}
		if p.Spec.NodeName == "" {
			rep.Unbound++
			if p.Status.Phase != corev1.PodPending {
				problems = append(problems, fmt.Sprintf("%s: unbound but phase %s", p.Name, p.Status.Phase))
			}
			continue
		}
		rep.Bound++
		bp := p.Annotations[annoBindPhase]
		failed := p.Status.Phase == corev1.PodFailed && bp == "failed" && p.Status.Reason == "UnexpectedAdmissionError"
		running := p.Status.Phase == corev1.PodRunning && bp == "success"
		switch {
		case f == faultFail && !failed:
			problems = append(problems, fmt.Sprintf("%s: drawn to fail but phase %s, bind-phase %q, reason %q",
				p.Name, p.Status.Phase, bp, p.Status.Reason))
		case f != faultFail && !running:
			problems = append(problems, fmt.Sprintf("%s: not drawn to fail but phase %s, bind-phase %q, reason %q",
				p.Name, p.Status.Phase, bp, p.Status.Reason))
		}
		if failed {
			rep.Failed++
		}
		if running {
			rep.Running++
		}
		if f == faultDelay {
			rep.Delayed++
			rep.DelayedPods = append(rep.DelayedPods, p.Name)
		}
	}
	sort.Strings(rep.DelayedPods)
	out, _ := json.Marshal(rep)
	fmt.Println(string(out))
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("%d pod(s) disagree with the fault draw: %s", len(problems), strings.Join(problems, "; "))
	}
	return nil
}

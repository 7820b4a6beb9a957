package main

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func settlePod(name, node string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func unschedulable(p *corev1.Pod, msg string) *corev1.Pod {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: msg}}
	return p
}

func filteringFailed(p *corev1.Pod, component string) *corev1.Event {
	return &corev1.Event{Reason: "FilteringFailed", Source: corev1.EventSource{Component: component},
		InvolvedObject: corev1.ObjectReference{UID: p.UID}}
}

func TestSettleStateEndStates(t *testing.T) {
	bound := settlePod("a", "n1", corev1.PodRunning)
	refused := unschedulable(settlePod("b", "", corev1.PodPending), "0/2 nodes are available: 2 CardInsufficientMemory.")
	pods := []any{bound, refused}
	events := []any{filteringFailed(refused, "hami-scheduler")}
	sig, sum, waiting, failed := settleState(pods, events, false, false)
	if len(waiting) != 0 || len(failed) != 0 {
		t.Fatalf("waiting %v, failed %v; want none", waiting, failed)
	}
	if sig != "a=bound:n1,b=unschedulable" {
		t.Fatalf("sig %q", sig)
	}
	want := settleSummary{Pods: 2, Bound: 1, Unschedulable: 1, Reasons: map[string]int{"CardInsufficientMemory": 1}}
	if !reflect.DeepEqual(sum, want) {
		t.Fatalf("summary %+v; want %+v", sum, want)
	}
}

// A refusal counts only with a FilteringFailed Event of hami-scheduler for that pod; a bound pod
// only once Running.
func TestSettleStateWaiting(t *testing.T) {
	noEvent := unschedulable(settlePod("c", "", corev1.PodPending), "0/2 nodes are available")
	otherSource := unschedulable(settlePod("d", "", corev1.PodPending), "0/2 nodes are available")
	notRunning := settlePod("e", "n2", corev1.PodPending)
	notRunning.Annotations = map[string]string{annoBindPhase: "allocating"}
	pods := []any{settlePod("a", "n1", corev1.PodRunning), noEvent, otherSource, notRunning}
	events := []any{filteringFailed(otherSource, "default-scheduler")}

	sig, sum, waiting, _ := settleState(pods, events, false, false)
	if sig != "" || !reflect.DeepEqual(waiting, []string{settleSomeWaiting}) {
		t.Fatalf("without detail: sig %q, waiting %v; want no sig and %q", sig, waiting, settleSomeWaiting)
	}
	if sum.Pods != 4 || sum.Bound != 1 || sum.Unschedulable != 0 {
		t.Fatalf("summary %+v", sum)
	}
	_, _, waiting, _ = settleState(pods, events, false, true)
	want := []string{
		`c (node "", phase Pending, bind-phase "")`,
		`d (node "", phase Pending, bind-phase "")`,
		`e (node "n2", phase Pending, bind-phase "allocating")`,
	}
	if !reflect.DeepEqual(waiting, want) {
		t.Fatalf("with detail: waiting %q; want %q", waiting, want)
	}
}

func TestSettleStateFailed(t *testing.T) {
	byPlugin := settlePod("f", "n1", corev1.PodFailed)
	byPlugin.Status.Reason = "UnexpectedAdmissionError"
	byPlugin.Annotations = map[string]string{annoBindPhase: "failed"}
	other := settlePod("g", "n1", corev1.PodSucceeded)

	_, sum, waiting, failed := settleState([]any{byPlugin}, nil, true, false)
	if sum.Failed != 1 || len(waiting) != 0 || len(failed) != 0 {
		t.Fatalf("--allow-failed: summary %+v, waiting %v, failed %v; want 1 failed, an end state", sum, waiting, failed)
	}
	_, _, _, failed = settleState([]any{byPlugin, other}, nil, false, false)
	if len(failed) != 2 || !strings.HasPrefix(failed[0], "f Failed UnexpectedAdmissionError") ||
		!strings.HasPrefix(failed[1], "g Succeeded") {
		t.Fatalf("without --allow-failed: failed %q; want f and g", failed)
	}
}

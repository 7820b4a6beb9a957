package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func stubGPUPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{resourceGPU: resource.MustParse("1"),
				"nvidia.com/gpumem": resource.MustParse("700"), "nvidia.com/gpucores": resource.MustParse("4")}}}}},
	}
}

// The stub's Bind: the lock on the node names the pod, the Binding carries the hand-off
// annotations with the next card of the node, and the call returns only once the pod shows
// bind-phase success; the next pod on the node gets the next card.
func TestHamiStubBindHandsOff(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{
		annoRegister: `[{"id":"GPU-a","count":10,"devmem":16384,"devcore":100,"type":"T4","health":true},` +
			`{"id":"GPU-b","index":1,"count":10,"devmem":16384,"devcore":100,"type":"T4","health":true}]`}}}
	cs := fake.NewSimpleClientset(node, stubGPUPod("p1"), stubGPUPod("p2"), stubGPUPod("p3"), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: "ns", UID: "uid-cpu"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}})
	var mu sync.Mutex
	var bindings []*corev1.Binding
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || a.GetSubresource() != "binding" {
			return false, nil, nil
		}
		b := ca.GetObject().(*corev1.Binding)
		if b.Name == "p3" {
			return true, nil, fmt.Errorf("pods \"p3\" not found")
		}
		mu.Lock()
		bindings = append(bindings, b)
		mu.Unlock()
		return true, b, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h, err := startHamiStub(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.bind(ctx, stubBindArgs{PodName: "cpu", PodNamespace: "ns", PodUID: "uid-cpu", Node: "n1"}); err == nil ||
		err.Error() != "pod ns/cpu asks for no nvidia.com/gpu" {
		t.Fatalf("bind of a pod without GPUs: %v", err)
	}
	for i, want := range []string{"GPU-a,NVIDIA,700,4:;", "GPU-b,NVIDIA,700,4:;"} {
		name := []string{"p1", "p2"}[i]
		done := make(chan error, 1)
		go func() {
			done <- h.bind(ctx, stubBindArgs{PodName: name, PodNamespace: "ns", PodUID: types.UID("uid-" + name), Node: "n1"})
		}()
		// Wait for the Binding, then check the lock and the hand-off annotations.
		var b *corev1.Binding
		for b == nil {
			select {
			case err := <-done:
				t.Fatalf("bind of %s returned before its hand-off: %v", name, err)
			case <-ctx.Done():
				t.Fatalf("no Binding of %s", name)
			case <-time.After(time.Millisecond):
			}
			mu.Lock()
			if len(bindings) == i+1 {
				b = bindings[i]
			}
			mu.Unlock()
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lock := n.Annotations[annoNodeLock]; !strings.HasSuffix(lock, ",ns,"+name) {
			t.Fatalf("lock %q: want the owner ns,%s", lock, name)
		}
		a := b.Annotations
		if b.Target.Name != "n1" || a[annoBindPhase] != "allocating" || a[annoToAllocate] != want ||
			a[annoAllocated] != want || a[annoVGPUNode] != "n1" || a["hami.io/bind-time"] == "" {
			t.Fatalf("binding of %s: target %q, annotations %v; want %q", name, b.Target.Name, a, want)
		}
		select {
		case err := <-done:
			t.Fatalf("bind of %s returned before its hand-off: %v", name, err)
		default:
		}
		// The device plugin's hand-off ends the Bind.
		p := stubGPUPod(name)
		p.Annotations = map[string]string{annoBindPhase: "success"}
		if _, err := cs.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("bind of %s: %v", name, err)
			}
		case <-ctx.Done():
			t.Fatalf("bind of %s did not end after its hand-off", name)
		}
	}
	// A Binding refused: the error says so and the lock the Bind took is gone.
	err = h.bind(ctx, stubBindArgs{PodName: "p3", PodNamespace: "ns", PodUID: "uid-p3", Node: "n1"})
	if err == nil || err.Error() != `binding: pods "p3" not found` {
		t.Fatalf("bind of p3: %v", err)
	}
	n, err := cs.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lock, ok := n.Annotations[annoNodeLock]; ok {
		t.Fatalf("lock %q left after a refused Binding", lock)
	}
}

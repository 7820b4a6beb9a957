package main

import (
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Keys of the HAMi protocol this tool reads or writes (hami-compat.md §1).
const (
	annoRegister   = "hami.io/node-nvidia-register"
	annoNodeLock   = "hami.io/mutex.lock"
	annoBindPhase  = "hami.io/bind-phase"
	annoToAllocate = "hami.io/vgpu-devices-to-allocate"
	annoAllocated  = "hami.io/vgpu-devices-allocated"
	annoVGPUNode   = "hami.io/vgpu-node" // annotation and label
	resourceGPU    = "nvidia.com/gpu"

	// Label put on every node this tool creates; the agent only acts on pods bound to such nodes.
	labelFakeNode = "e2e.vgpu-sched/fake-node"
	// Pod annotation steering the emulated device plugin: "fail" makes Allocate fail
	// (bind-phase=failed, lock released, pod Failed); "hold" leaves the pod allocating and the
	// node locked (as a plugin that never gets an Allocate call would).
	annoHandoff = "e2e.vgpu-sched/handoff"
)

// Milliseconds and below: the burst scenarios read hand-off steps (Bind, Allocate, release)
// from this log beside vgpu-sched's.
var logger = log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds|log.Lmsgprefix)

type kubeClient = kubernetes.Interface

func kubeconfigFromEnv() string { return os.Getenv("KUBECONFIG") }

func newClient(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := newConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// newConfig: the kubeconfig's client settings with a client-side limit of 100 requests/s
// (burst 200). Each clientset made from it has its own limiter.
func newConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = kubeconfigFromEnv()
	}
	if kubeconfig == "" {
		return nil, fmt.Errorf("no --kubeconfig and no $KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS = 100
	cfg.Burst = 200
	cfg.UserAgent = "vs-e2e"
	return cfg, nil
}

// cmdFreeport binds N listeners on 127.0.0.1:0 at once (so the ports are distinct), prints the
// ports and closes them. The caller starts its servers right after; a port being taken in
// between is possible but rare, and the servers fail loudly if it happens.
func cmdFreeport(args []string) error {
	n := 1
	if len(args) > 0 {
		v, err := strconv.Atoi(args[0])
		if err != nil || v < 1 || v > 64 {
			return fmt.Errorf("bad count %q", args[0])
		}
		n = v
	}
	ports := make([]string, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	fmt.Println(strings.Join(ports, " "))
	return nil
}

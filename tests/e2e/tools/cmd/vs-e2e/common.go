package main

import (
	"fmt"
	"log"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

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

// cmdFreeport prints N distinct free TCP ports of 127.0.0.1 for servers the caller starts
// afterwards (etcd, kube-apiserver, kube-scheduler, vgpu-sched). The ports lie below Linux's
// ephemeral range (ip_local_port_range): a port from that range is free only until an outgoing
// connection (kube-apiserver to etcd, any client) is given it as its local port, and a server
// started a few seconds later then fails with "address already in use". Below the range only a
// server binding that very port can take it. Each candidate is proved free by binding it (all N
// held at once, so they are distinct) and released when the ports are printed.
func cmdFreeport(args []string) error {
	n := 1
	if len(args) > 0 {
		v, err := strconv.Atoi(args[0])
		if err != nil || v < 1 || v > 64 {
			return fmt.Errorf("bad count %q", args[0])
		}
		n = v
	}
	lo, hi, err := belowEphemeral()
	if err != nil {
		return err
	}
	ports := make([]string, 0, n)
	span := hi - lo + 1
	start := lo + int(time.Now().UnixNano()%int64(span)) // runs after one another differ
	for i := 0; i < span && len(ports) < n; i++ {
		port := lo + (start-lo+i)%span
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use
		}
		defer l.Close()
		ports = append(ports, strconv.Itoa(port))
	}
	if len(ports) < n {
		return fmt.Errorf("only %d free ports in %d-%d, below the ephemeral range", len(ports), lo, hi)
	}
	fmt.Println(strings.Join(ports, " "))
	return nil
}

// belowEphemeral: the ports freeport hands out, 10000 up to the start of the ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range, 32768 by default), or 1024 up to it when the range
// starts lower than 11024.
func belowEphemeral() (int, int, error) {
	first := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			if v, err := strconv.Atoi(f[0]); err == nil {
				first = v
			}
		}
	}
	lo := 10000
	if first-1 < lo+1024 {
		lo = 1024
	}
	if first-1 < lo {
		return 0, 0, fmt.Errorf("the ephemeral range starts at %d: no port below it to hand out", first)
	}
	return lo, first - 1, nil
}

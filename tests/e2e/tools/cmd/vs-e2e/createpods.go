package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// create-pods: create every Pod of a YAML stream (or JSON) with N concurrent requests, so a
// burst reaches the API server (and, through it, the webhook and kube-scheduler) at once rather
// than one kubectl round trip after another. Each pod goes through admission as usual.
func cmdCreatePods(args []string) error {
	fs := flag.NewFlagSet("create-pods", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	conc := fs.Int("concurrency", 20, "requests in flight")
	ns := fs.String("namespace", "default", "namespace of pods that do not name one")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: vs-e2e create-pods [flags] FILE|-")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return fmt.Errorf("want one file")
	}
	var in io.Reader = os.Stdin
	if f := fs.Arg(0); f != "-" {
		fh, err := os.Open(f)
		if err != nil {
			return err
		}
		defer fh.Close()
		in = fh
	}
	var pods []*corev1.Pod
	dec := utilyaml.NewYAMLOrJSONDecoder(in, 4096)
	for {
		p := &corev1.Pod{}
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if p.Name == "" && p.GenerateName == "" {
			continue // empty document
		}
		if p.Kind != "" && p.Kind != "Pod" {
			return fmt.Errorf("%s: kind %s, want Pod", p.Name, p.Kind)
		}
		if p.Namespace == "" {
			p.Namespace = *ns
		}
		pods = append(pods, p)
	}
	cs, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	work := make(chan *corev1.Pod)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for i := 0; i < max(*conc, 1); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				if _, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err))
					mu.Unlock()
				}
			}
		}()
	}
	for _, p := range pods {
		work <- p
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	logger.Printf("created %d pods in %.1fs", len(pods), time.Since(t0).Seconds())
	return nil
}

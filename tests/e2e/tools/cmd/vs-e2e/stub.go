package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// stub-extender: the smallest scheduler extender that satisfies kube-scheduler (filter keeps
// every candidate, bind creates the Binding), served over HTTPS with an optional client-CA.
// It proves the e2e wiring (extender stanza, TLS material, managedResources, bind delegation)
// independently of vgpu-sched. With --hami it also does the least HAMi's device-plugin protocol
// needs (hamistub.go), as the yardstick of the `baseline-floor` scenario.
// Wire format: shared spec k8s-protocols.md §1 (PascalCase keys).

type stubFilterArgs struct {
	Pod       *corev1.Pod
	NodeNames *[]string
}

type stubFilterResult struct {
	NodeNames   *[]string
	FailedNodes map[string]string
	Error       string
}

type stubBindArgs struct {
	PodName      string
	PodNamespace string
	PodUID       types.UID
	Node         string
}

type stubBindResult struct {
	Error string
}

func cmdStubExtender(args []string) error {
	fs := flag.NewFlagSet("stub-extender", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig (default $KUBECONFIG)")
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	certFile := fs.String("cert", "", "serving certificate (PEM); empty = plain HTTP")
	keyFile := fs.String("key", "", "serving key (PEM)")
	clientCA := fs.String("client-ca", "", "require client certificates signed by this CA (PEM)")
	hamiMode := fs.Bool("hami", false, "bind as HAMi's protocol needs (node lock, device lists, one allocation in flight per node), log no calls")
	h2 := fs.Bool("http2", true, "offer HTTP/2 over TLS (Go's default); false: HTTP/1.1 only, as vgpu-sched serves")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cs, err := newClient(*kubeconfig)
	if err != nil {
		return err
	}
	logger.SetPrefix("vs-e2e stub-extender: ")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var hs *hamiStub
	if *hamiMode {
		if hs, err = startHamiStub(ctx, cs); err != nil {
			return err
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /filter", func(w http.ResponseWriter, r *http.Request) {
		var in stubFilterArgs
		if err := decodeBody(r, &in); err != nil || in.Pod == nil {
			writeJSON(w, stubFilterResult{Error: fmt.Sprintf("bad filter request: %v", err)})
			return
		}
		names := []string{}
		if in.NodeNames != nil {
			names = *in.NodeNames
		}
		if hs == nil {
			logger.Printf("filter %s/%s nodes=%v client=%s", in.Pod.Namespace, in.Pod.Name, names, peerName(r))
		}
		writeJSON(w, stubFilterResult{NodeNames: &names, FailedNodes: map[string]string{}})
	})
	mux.HandleFunc("POST /bind", func(w http.ResponseWriter, r *http.Request) {
		var in stubBindArgs
		if err := decodeBody(r, &in); err != nil {
			writeJSON(w, stubBindResult{Error: fmt.Sprintf("bad bind request: %v", err)})
			return
		}
		timeout := 10 * time.Second
		if hs != nil {
			timeout = 30 * time.Second // kube-scheduler's own limit: Binds wait their node's turn
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if hs != nil {
			res := stubBindResult{}
			if err := hs.bind(ctx, in); err != nil {
				res.Error = err.Error()
				logger.Printf("bind %s/%s -> %s error=%q", in.PodNamespace, in.PodName, in.Node, res.Error)
			}
			writeJSON(w, res)
			return
		}
		err := cs.CoreV1().Pods(in.PodNamespace).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: in.PodName, Namespace: in.PodNamespace, UID: in.PodUID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: in.Node},
		}, metav1.CreateOptions{})
		res := stubBindResult{}
		if err != nil {
			res.Error = err.Error()
		}
		logger.Printf("bind %s/%s -> %s error=%q client=%s", in.PodNamespace, in.PodName, in.Node, res.Error, peerName(r))
		writeJSON(w, res)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	var conns atomic.Int64 // connections accepted: a TLS handshake each
	mux.HandleFunc("GET /connections", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintf(w, "%d\n", conns.Load())
	})

	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				conns.Add(1)
			}
		}}
	if !*h2 {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	if *clientCA != "" {
		pem, err := os.ReadFile(*clientCA)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("no certificate in %s", *clientCA)
		}
		srv.TLSConfig = &tls.Config{ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	logger.Printf("listening on %s (tls=%v, client-ca=%v, hami=%v, http2=%v)", *listen, *certFile != "", *clientCA != "", *hamiMode, *h2)
	if *certFile != "" {
		err = srv.ListenAndServeTLS(*certFile, *keyFile)
	} else {
		err = srv.ListenAndServe()
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func decodeBody(r *http.Request, v any) error {
	return json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(v)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func peerName(r *http.Request) string {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return "-"
	}
	return r.TLS.PeerCertificates[0].Subject.CommonName
}

// Command vs-e2e is the Go helper of vgpu-sched's end-to-end tests (tests/e2e). It talks to a
// real kube-apiserver and stands in for the parts of a cluster the tests do not run:
//
//	vs-e2e freeport [N]            print N free loopback TCP ports below the ephemeral range
//	vs-e2e nodes [flags] NAME...   create/refresh fake GPU nodes (HAMi register annotation,
//	                               capacity, Ready condition, no not-ready taint)
//	vs-e2e agent [flags]           for pods on fake nodes, emulate the kubelet and the HAMi
//	                               device plugin's Allocate handoff (hami-compat.md §6.4)
//	vs-e2e stub-extender [flags]   trivial HTTPS extender (filter keeps all, bind binds) to
//	                               check the kube-scheduler wiring without vgpu-sched
//	vs-e2e create-pods [flags] F   create the Pods of a YAML stream concurrently
//	vs-e2e settle [flags]          wait until every pod is bound and Running or refused
//	vs-e2e capacity [flags]        per-card usage of bound pods never exceeds a card
//	vs-e2e faults [flags]          pods hit by the agent's injected faults are exactly the drawn ones
//	vs-e2e cpu PID[,PID...]        each process's CPU seconds so far (user + system)
//
// Every subcommand takes --kubeconfig (default $KUBECONFIG).
package main

import (
	"fmt"
	"os"
)

func usage() {
	fmt.Fprint(os.Stderr, `usage: vs-e2e COMMAND [flags]
commands:
  freeport [N]          print N (default 1) free TCP ports on 127.0.0.1 below the ephemeral range, space separated
  nodes [flags] NAME... create or refresh fake GPU nodes (vs-e2e nodes -h)
  agent [flags]         emulate kubelet + HAMi device-plugin handoff for fake nodes (vs-e2e agent -h)
  stub-extender [flags] trivial extender for wiring checks (vs-e2e stub-extender -h)
  create-pods [flags] F create the Pods of a YAML stream concurrently (vs-e2e create-pods -h)
  settle [flags]        wait until every pod is bound+Running or refused by the extender
  capacity [flags]      check no card is over-committed by bound pods (vs-e2e capacity -h)
  faults [flags]        check the outcome of the agent's injected faults (vs-e2e faults -h)
  cpu PID[,PID...]      print each process's CPU seconds so far (user + system), space separated
`)
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "freeport":
		err = cmdFreeport(os.Args[2:])
	case "nodes":
		err = cmdNodes(os.Args[2:])
	case "agent":
		err = cmdAgent(os.Args[2:])
	case "stub-extender":
		err = cmdStubExtender(os.Args[2:])
	case "create-pods":
		err = cmdCreatePods(os.Args[2:])
	case "settle":
		err = cmdSettle(os.Args[2:])
	case "capacity":
		err = cmdCapacity(os.Args[2:])
	case "faults":
		err = cmdFaults(os.Args[2:])
	case "cpu":
		err = cmdCPU(os.Args[2:])
	case "-h", "--help", "help":
		usage()
		return
	default:
		fmt.Fprintf(os.Stderr, "vs-e2e: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "vs-e2e %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

package main

import (
	"fmt"
	"testing"
)

// The chaos-agent workload: pods chaos/k-1..k-200, seed 14, 10 % fail, 10 % delay.
func TestPickChaosAgentWorkload(t *testing.T) {
	o := faultOpts{failRate: 0.1, delayRate: 0.1, seed: 14}
	n := map[fault]int{}
	for i := 1; i <= 200; i++ {
		name := fmt.Sprintf("k-%d", i)
		f := o.pick("chaos", name)
		if g := o.pick("chaos", name); g != f {
			t.Fatalf("%s: draw not repeatable: %v then %v", name, f, g)
		}
		n[f]++
	}
	if n[faultFail] != 20 || n[faultDelay] != 20 || n[faultNone] != 160 {
		t.Fatalf("fail %d, delay %d, none %d; want 20, 20, 160", n[faultFail], n[faultDelay], n[faultNone])
	}
}

func TestPickRates(t *testing.T) {
	none := faultOpts{seed: 14}
	all := faultOpts{failRate: 1, seed: 14}
	allDelay := faultOpts{delayRate: 1, seed: 14}
	for i := 0; i < 100; i++ {
		name := fmt.Sprintf("p-%d", i)
		if f := none.pick("ns", name); f != faultNone {
			t.Fatalf("rates 0: %s drew %v", name, f)
		}
		if f := all.pick("ns", name); f != faultFail {
			t.Fatalf("fail-rate 1: %s drew %v", name, f)
		}
		if f := allDelay.pick("ns", name); f != faultDelay {
			t.Fatalf("delay-rate 1: %s drew %v", name, f)
		}
	}
	// Another seed draws other pods.
	a, b := faultOpts{failRate: 0.5, seed: 1}, faultOpts{failRate: 0.5, seed: 2}
	same := 0
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("p-%d", i)
		if a.pick("ns", name) == b.pick("ns", name) {
			same++
		}
	}
	if same == 200 {
		t.Fatal("seeds 1 and 2 drew the same pods")
	}
}

func TestFaultValidate(t *testing.T) {
	for _, c := range []struct {
		o    faultOpts
		want string
	}{
		{faultOpts{failRate: -0.1}, "--fail-rate -0.1: want a fraction in [0, 1]"},
		{faultOpts{delayRate: 1.5}, "--delay-rate 1.5: want a fraction in [0, 1]"},
		{faultOpts{failRate: 0.6, delayRate: 0.5}, "--fail-rate + --delay-rate = 1.1: a pod is failed or delayed, never both, so the sum must not exceed 1"},
		{faultOpts{failRate: 0.5, delayRate: 0.5}, ""},
	} {
		err := c.o.validate()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%+v: got %q, want %q", c.o, got, c.want)
		}
	}
}

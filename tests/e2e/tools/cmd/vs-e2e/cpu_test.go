package main

import (
	"fmt"
	"math"
	"os"
	"syscall"
	"testing"
	"time"
)

// procCPU's reading of this process agrees with getrusage's user + system time once some CPU
// has been spent (other fields of /proc/PID/stat would not).
func TestProcCPU(t *testing.T) {
	x := 0
	for start := time.Now(); time.Since(start) < 300*time.Millisecond; x++ {
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	want := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	got, err := procCPU([]int{os.Getpid(), os.Getpid()})
	if err != nil || len(got) != 2 || got[1] < got[0] || math.Abs(got[0]-want) > 0.05 {
		t.Fatalf("procCPU(self, self) = %v, %v; getrusage says %.2f s (after %d spins)", got, err, want, x)
	}
	_, err = procCPU([]int{1 << 30})
	if wantErr := fmt.Sprintf("open /proc/%d/stat: no such file or directory", 1<<30); err == nil || err.Error() != wantErr {
		t.Fatalf("a PID that does not exist: err %v, want %q", err, wantErr)
	}
}

func TestParsePids(t *testing.T) {
	got, err := parsePids("1,22,333")
	if err != nil || fmt.Sprint(got) != "[1 22 333]" {
		t.Fatalf(`parsePids("1,22,333") = %v, %v`, got, err)
	}
	for in, want := range map[string]string{
		"":      `bad PID ""`,
		"1,,2":  `bad PID ""`,
		"0":     `bad PID "0"`,
		"-3":    `bad PID "-3"`,
		"12,x7": `bad PID "x7"`,
	} {
		if _, err := parsePids(in); err == nil || err.Error() != want {
			t.Errorf("parsePids(%q): err %v, want %q", in, err, want)
		}
	}
}

func TestFormatCPU(t *testing.T) {
	if got := formatCPU([]float64{0, 1.5, 12.345, 3.999}); got != "0.00 1.50 12.35 4.00" {
		t.Fatalf("formatCPU = %q", got)
	}
	if got := formatCPU(nil); got != "" {
		t.Fatalf("formatCPU(nil) = %q", got)
	}
}

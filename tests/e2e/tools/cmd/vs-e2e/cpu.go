package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cmdCPU: vs-e2e cpu PID[,PID...] prints each process's CPU seconds so far (user + system),
// space separated with two decimals, in the order given: what a scenario reads before a burst
// and compares with settle --cpu-pids at its end (both through procCPU).
func cmdCPU(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("want one argument, comma-separated PIDs")
	}
	pids, err := parsePids(args[0])
	if err != nil {
		return err
	}
	cpu, err := procCPU(pids)
	if err != nil {
		return err
	}
	fmt.Println(formatCPU(cpu))
	return nil
}

// formatCPU: "S1 S2 ..." with two decimals each.
func formatCPU(cpu []float64) string {
	f := make([]string, len(cpu))
	for i, c := range cpu {
		f[i] = strconv.FormatFloat(c, 'f', 2, 64)
	}
	return strings.Join(f, " ")
}

// parsePids: "1,22,333" as PIDs (each a positive integer).
func parsePids(s string) ([]int, error) {
	var pids []int
	for _, f := range strings.Split(s, ",") {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("bad PID %q", f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// procCPU: each process's CPU seconds so far, user + system (/proc/PID/stat fields 14 and 15,
// in the kernel's USER_HZ of 100 ticks per second).
func procCPU(pids []int) ([]float64, error) {
	var out []float64
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return nil, err
		}
		// The command name (field 2) is in parentheses and may hold spaces: count after it.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return nil, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			return nil, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
		}
		ut, err1 := strconv.ParseUint(f[11], 10, 64)
		st, err2 := strconv.ParseUint(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
		}
		out = append(out, float64(ut+st)/100)
	}
	return out, nil
}

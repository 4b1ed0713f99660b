package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"rsag/internal/testkit/mpitesting"
)

// scripts/bench-imb.sh reduces rsag's per-rank samples IMB's way (each
// rank's mean, then the mean and the maximum over the ranks) and takes the
// median of per-round ratios; its self-test checks both on samples whose
// answers are known, and this runs it.
func TestBenchIMBReductions(t *testing.T) {
	for _, tool := range []string{"bash", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", "scripts/bench-imb.sh", "--self-test").CombinedOutput()
	if err != nil {
		t.Fatalf("bench-imb.sh --self-test: %v\n%s", err, out)
	}
}

// The benchmarks' C programs (scripts/bench-cloop.c, rsag's timed loop in
// plain C, and scripts/bench-launch.c, an operation's time over a
// launch's first seconds) build with this machine's mpicc and print, on 2
// ranks, the rows their readers expect: a row a size, and a row a bin,
// each of positive times.
func TestBenchCProgramsBuildAndRun(t *testing.T) {
	for _, tool := range []string{"mpicc", "mpirun"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (make deps installs Open MPI)", tool)
		}
	}
	dir := t.TempDir()
	run := func(name string, args ...string) [][]float64 {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		bin := filepath.Join(dir, name)
		if out, err := exec.CommandContext(ctx, "mpicc", "-O2", "-o", bin, filepath.Join("scripts", name+".c")).CombinedOutput(); err != nil {
			t.Fatalf("mpicc %s.c: %v\n%s", name, err, out)
		}
		cmd := exec.CommandContext(ctx, "scripts/mpirun.sh", append([]string{"2", bin}, args...)...)
		cmd.Env = append(os.Environ(), mpitesting.JobSessionDir(t))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v\n%s%s", name, args, err, stdout.String(), stderr.String())
		}
		var rows [][]float64
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			if strings.HasPrefix(line, "#") {
				continue
			}
			var row []float64
			for _, f := range strings.Fields(line) {
				v, err := strconv.ParseFloat(f, 64)
				if err != nil {
					t.Fatalf("%s %v: %q is not a row of numbers\n%s", name, args, line, stdout.String())
				}
				row = append(row, v)
			}
			rows = append(rows, row)
		}
		return rows
	}
	// bench-cloop BATCH WARMUPS CYCLES DISCARD SIZE...: "size t_avg t_max median".
	rows := run("bench-cloop", "5", "1", "4", "1", "1024", "65536")
	if len(rows) != 2 {
		t.Fatalf("bench-cloop: %d rows, want one a size: %v", len(rows), rows)
	}
	for i, size := range []float64{1024, 65536} {
		if r := rows[i]; len(r) != 4 || r[0] != size || r[1] <= 0 || r[2] < r[1] || r[3] <= 0 {
			t.Errorf("bench-cloop row %v, want %v bytes, then t_avg > 0, t_max >= t_avg, median > 0", r, size)
		}
	}
	// bench-launch MODE BYTES BINS BIN_OPS: a row a bin, starting in
	// order, each with its time per operation.
	for _, mode := range []string{"allreduce", "memory"} {
		rows := run("bench-launch", mode, "65536", "3", "4")
		if len(rows) != 3 {
			t.Fatalf("bench-launch %s: %d rows, want one a bin: %v", mode, len(rows), rows)
		}
		for i, r := range rows {
			if len(r) != 6 || r[1] <= 0 || i > 0 && r[0] < rows[i-1][0] {
				t.Errorf("bench-launch %s bin %d: %v, want 6 figures, a start after the last bin's and a time per operation > 0", mode, i, r)
			}
		}
	}
}

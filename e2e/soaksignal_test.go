package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"rsag/outdir"
)

// A signal during a soak keeps what ran before it (issue 34 class 16):
// rank 0 checkpoints soak.csv as the soak goes, so the iterations done by
// the last checkpoint are there, in order from 0, each with its case and
// verdict, while run.json says the run failed, by the signal. On the test
// build's cadence (fastRsag): a progress line, and a checkpoint, a second
// apart.
func TestASignalDuringASoakKeepsWhatRan(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	j := startJobOf(t, fastRsag(t), 2, nil, "-config", "../configs/soak.toml", "-backend", "mpi", "-output-dir", dir,
		"-set", "contracts.enabled=false", "-set", "soak.duration_s=120", "-set", "soak.max_bytes=\"64K\"")
	// The second progress line comes two of them in (cadence.SoakProgress),
	// after the first checkpoint.
	j.waitLine(t, "soak: ", 2*time.Minute)
	j.waitLine(t, "soak: ", 2*time.Minute)
	if err := j.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := j.wait(t, time.Minute); code == 0 {
		t.Error("exit 0 after SIGTERM")
	}
	if run := finalRun(t, dir); run.Status != outdir.StatusFailed {
		t.Errorf("%s says %q (%s), want failed", outdir.RunFile, run.Status, run.Reason)
	}
	if _, err := os.Stat(filepath.Join(dir, "soak.csv")); err != nil {
		t.Fatalf("no soak.csv after the signal: %v", err)
	}
	rows := readCSV(t, filepath.Join(dir, "soak.csv"))
	if len(rows) < 2 {
		t.Fatalf("soak.csv has %d rows, want the iterations before the signal", len(rows))
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	for _, c := range []string{"iteration", "dtype", "verdict"} {
		if _, ok := col[c]; !ok {
			t.Fatalf("soak.csv has no %s column: %v", c, rows[0])
		}
	}
	for i, r := range rows[1:] {
		if n, err := strconv.Atoi(r[col["iteration"]]); err != nil || n != i {
			t.Fatalf("row %d is iteration %q, want %d: the iterations in order from 0", i+1, r[col["iteration"]], i)
		}
	}
	t.Logf("soak.csv kept %d iterations through the signal", len(rows)-1)
}

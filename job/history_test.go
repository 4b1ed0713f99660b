package job_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rsag/internal/testkit/inmem"
	"rsag/job"
)

// lastLine is s's last line that is not empty.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// With -history the verdict is still the last line: the append's own line
// ("history: added as run 1") comes before it, for a run that passed and
// for one that failed, and on every later run of the same history.
func TestTheVerdictIsTheLastLineWithAHistory(t *testing.T) {
	tmp := t.TempDir()
	db := filepath.Join(tmp, "history.db")
	host, _ := os.Hostname()
	for i, c := range []struct {
		sets    []string
		code    int
		verdict string
	}{
		{[]string{"backend=mpi", "timing.cycles=2", "memory.enabled=false"}, job.ExitOK, "rsag: PASSED"},
		{[]string{"backend=mpi", "timing.cycles=2", "memory.enabled=false", "timing.min_busbw_gbps=100000"}, job.ExitFailed, "rsag: FAILED"},
	} {
		dir := filepath.Join(tmp, "run"+string(rune('a'+i)))
		ended := inmem.NewRanks([]string{host, host}, inmem.Faults{}, time.Minute).Run(time.Minute, func(w *inmem.World) int {
			return job.Main(job.Options{ConfigPath: "../configs/smoke.toml", OutputDir: dir, History: db, Sets: c.sets,
				Started: time.Now(), Stdout: w.Stdout(), Stderr: w.Stderr(), Exit: w.Exit, World: w})
		})
		out := ended[0].Stdout
		if ended[0].Code != c.code || !strings.Contains(out, "history: added as run ") {
			t.Fatalf("run %d: exit %d (want %d), stdout:\n%s\nstderr:\n%s", i+1, ended[0].Code, c.code, out, ended[0].Stderr)
		}
		if last := lastLine(out); !strings.HasPrefix(last, c.verdict) {
			t.Errorf("run %d: the last line is %q, want the verdict (%s)\n%s", i+1, last, c.verdict, out)
		}
	}
}

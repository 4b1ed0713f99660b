package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"rsag/internal/testkit/outcheck"
	"rsag/outdir"
	"rsag/report"
)

// A world above rank_folder_above puts every rank's files in ranks/, and
// leaves on top the files a person opens. run.json lists them by their
// paths there; -overwrite removes them, and the folder once empty, and
// nothing of a user's beside them; a link planted at ranks/ is refused
// before anything runs. (2 ranks stand for a fleet: rank_folder_above = 1;
// they run in this process, inproc: where the files go is the run's logic.)
func TestALargeWorldsRankFilesGoInAFolder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	folder := append(append([]string{"-output-dir", dir}, smoke...), "-set", "rank_folder_above=1")
	if r := inproc(t, 2, time.Minute, folder...); r.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	if err := outcheck.CheckManifest(dir); err != nil {
		t.Error(err)
	}
	run, err := outdir.ReadRecord(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ranks/rank0_timings.csv", "ranks/rank1_contracts.csv", "ranks/rank1_memory.csv", "timings.csv", report.SummaryFile} {
		if !slices.Contains(run.Files, f) {
			t.Errorf("run.json's files lack %s: %v", f, run.Files)
		}
	}
	for _, name := range entryNames(t, dir) {
		if strings.HasPrefix(name, "rank") && name != report.RankFolder {
			t.Errorf("%s is on top, beside the files a person opens", name)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ranks", "rank1_timings.csv")); err != nil || !strings.HasPrefix(string(b), "rank,size_bytes,mode,cycle,duration_us,correct\r\n1,") {
		t.Errorf("ranks/rank1_timings.csv is not rank 1's, in the seed's columns: %.80q, %v", b, err)
	}
	if r := launch(t, time.Minute, rsagBin, "report", dir); r.code != 0 {
		t.Errorf("rsag report: exit %d\n%s", r.code, r.stderr)
	}

	// A user's file in the folder stays, and so does the folder; the run's
	// own go.
	mine := filepath.Join(dir, "ranks", "my-notes.txt")
	if err := os.WriteFile(mine, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := inproc(t, 2, time.Minute, append([]string{"-output-dir", dir, "-overwrite"}, smoke...)...); r.code != 0 {
		t.Fatalf("-overwrite by a small world: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	if got := entryNames(t, filepath.Join(dir, "ranks")); !slices.Equal(got, []string{"my-notes.txt"}) {
		t.Errorf("ranks/ holds %v after -overwrite, want the user's file alone", got)
	}
	os.Remove(mine)
	if _, err := os.Stat(filepath.Join(dir, "rank1_timings.csv")); err != nil {
		t.Errorf("a small world's files are not in their seed's places: %v", err)
	}
	// And back: the small world's files on top go, and the folder, empty,
	// is taken again.
	if r := inproc(t, 2, time.Minute, append(folder, "-overwrite")...); r.code != 0 {
		t.Fatalf("-overwrite by a large world: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	if err := outcheck.CheckManifest(dir); err != nil {
		t.Error(err)
	}

	// A link at ranks/ is refused before anything runs, and followed never.
	planted, v := filepath.Join(t.TempDir(), "out"), t.TempDir()
	if err := os.Mkdir(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(v, filepath.Join(planted, "ranks")); err != nil {
		t.Fatal(err)
	}
	r := inproc(t, 2, time.Minute, append(append([]string{"-output-dir", planted}, smoke...), "-set", "rank_folder_above=1")...)
	if r.code != 2 {
		t.Errorf("exit %d, want 2 with the link refused\nstderr:\n%s", r.code, r.stderr)
	}
	saidOnce(t, r.stderr, filepath.Join(planted, "ranks")+" is a symbolic link to "+v)
	if got := entryNames(t, v); len(got) != 0 {
		t.Errorf("written through the link: %v", got)
	}
}

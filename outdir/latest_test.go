package outdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Runs started in the same second get dirs of their own, and a root made
// for them is listed to be removed, deepest first.
func TestNewRunDirIsNewEachTime(t *testing.T) {
	root := filepath.Join(t.TempDir(), "results")
	now := time.Date(2026, 12, 2, 18, 45, 12, 0, time.Local)
	var dirs []string
	for i := range 3 {
		dir, made, err := NewRunDir(root, "smoke", now)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && (len(made) != 2 || !strings.HasSuffix(made[1], "/results")) {
			t.Errorf("the first run made %v; want its dir, then results", made)
		}
		if i > 0 && len(made) != 1 {
			t.Errorf("run %d made %v; want its dir alone", i, made)
		}
		dirs = append(dirs, filepath.Base(dir))
	}
	want := []string{"20261202-184512-smoke", "20261202-184512-smoke-2", "20261202-184512-smoke-3"}
	if strings.Join(dirs, " ") != strings.Join(want, " ") {
		t.Errorf("dirs %v, want %v", dirs, want)
	}
	if got := Stem("../configs/my run;rm.toml"); got != "my_run_rm" {
		t.Errorf("Stem: %q", got)
	}
}

// latest is replaced when it is rsag's link, and left alone when it is
// anything else: a directory of results, a file, someone's link.
func TestPointLatestReplacesOnlyItsOwnLink(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "20261202-184512-smoke"), filepath.Join(root, "20261202-184513-smoke")
	os.Mkdir(a, 0o755)
	os.Mkdir(b, 0o755)
	link := filepath.Join(root, LatestLink)
	for _, dir := range []string{a, b} {
		if err := PointLatest(root, dir); err != nil {
			t.Fatal(err)
		}
		if target, err := os.Readlink(link); err != nil || target != filepath.Base(dir) {
			t.Errorf("latest -> %q, %v; want %s", target, err, filepath.Base(dir))
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 3 {
		t.Errorf("root holds %v; want the two dirs and latest, no temporary", entries)
	}
	for _, c := range []struct {
		name  string
		plant func() error
		want  string
	}{
		{"a directory", func() error { return os.Mkdir(link, 0o755) }, "is a directory that rsag did not make"},
		{"a file", func() error { return os.WriteFile(link, []byte("mine"), 0o644) }, "is a regular file that rsag did not make"},
		{"someone's link", func() error { return os.Symlink("/etc", link) }, "is a link to /etc that rsag did not make"},
	} {
		os.Remove(link)
		if err := c.plant(); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Lstat(link)
		err := PointLatest(root, b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
		if after, _ := os.Lstat(link); after == nil || after.Mode() != before.Mode() || after.ModTime() != before.ModTime() {
			t.Errorf("%s was touched", c.name)
		}
	}
}

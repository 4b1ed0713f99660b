package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWriteReplacesWholeAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(path, []byte("old and longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("read %q, %v; want %q", got, err, "new")
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}

func TestWriteIntoMissingDirFailsCleanly(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "no", "such", "f"), []byte("x")); err == nil {
		t.Fatal("no error writing into a missing directory")
	}
}

// plant makes dir/name a symbolic link to a victim file outside dir and
// returns the victim's path, holding "victim".
func plant(t *testing.T, dir, name string) string {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return victim
}

func untouched(t *testing.T, victim string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "victim" {
		t.Errorf("the victim %s now holds %q (%v)", victim, b, err)
	}
}

// A link at the name is refused by every way in, named with its target,
// and the file it points to is left as it was.
func TestALinkIsNeverFollowed(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(dir string) error
	}{
		{"Write", func(dir string) error { return Write(filepath.Join(dir, "f"), []byte("x")) }},
		{"OpenIn to create", func(dir string) error {
			f, err := OpenIn(dir, "f", os.O_RDWR|os.O_CREATE, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"OpenIn to read", func(dir string) error {
			f, err := OpenIn(dir, "f", os.O_RDONLY, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"ReadIn", func(dir string) error { _, err := ReadIn(dir, "f", 100); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := plant(t, dir, "f")
			err := c.do(dir)
			var le *LinkError
			if !errors.As(err, &le) || le.Target != victim || le.Path != filepath.Join(dir, "f") {
				t.Fatalf("got %v; want a *LinkError naming %s and %s", err, filepath.Join(dir, "f"), victim)
			}
			if !strings.Contains(err.Error(), "is a symbolic link to "+victim) {
				t.Errorf("message %q does not say what the link points to", err)
			}
			untouched(t, victim)
			if st, err := os.Lstat(filepath.Join(dir, "f")); err != nil || st.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link itself was replaced: %v, %v", st, err)
			}
		})
	}
}

// Remove takes away a link itself, never what it points to.
func TestRemoveNeverFollows(t *testing.T) {
	dir := t.TempDir()
	victim := plant(t, dir, "f")
	if err := Remove(dir, "f"); err != nil {
		t.Fatal(err)
	}
	untouched(t, victim)
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Remove(dir, "d"); err == nil {
		t.Error("Remove removed a directory")
	}
}

// Anything but a regular file at the name is refused by its kind, a FIFO
// without waiting for a writer.
func TestNotARegularFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "p"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, kind := range map[string]string{"d": "a directory", "p": "a named pipe"} {
		for _, err := range []error{
			Write(filepath.Join(dir, name), []byte("x")),
			func() error { _, err := ReadIn(dir, name, 10); return err }(),
			func() error { _, err := OpenIn(dir, name, os.O_RDWR|os.O_CREATE, 0o644); return err }(),
		} {
			var ke *KindError
			if !errors.As(err, &ke) || !strings.HasPrefix(ke.Kind, kind) {
				t.Errorf("%s: got %v; want a *KindError, %s", name, err, kind)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("left behind: %v", entries)
	}
}

// A name that could leave the directory, or names none, is refused, even
// where what it names exists.
func TestOnlyRelativeNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a/../b", "../b", "/etc/passwd", "a//b", "a/", "a/.", "..", ".", ""} {
		if _, err := OpenIn(dir, name, os.O_RDWR|os.O_CREATE, 0o644); err == nil {
			t.Errorf("OpenIn(%q) opened it", name)
		}
		if err := Remove(dir, name); err == nil {
			t.Errorf("Remove(%q) removed it", name)
		}
	}
}

// Write's temporaries are ones TargetOf knows, at most TempExtra bytes
// longer than their file's name.
func TestTempNames(t *testing.T) {
	for _, n := range []uint32{0, 7, 1 << 31, ^uint32(0)} {
		tmp := TempName("summary.json", n)
		if got, ok := TargetOf(tmp); !ok || got != "summary.json" {
			t.Errorf("TargetOf(%q) = %q, %v", tmp, got, ok)
		}
		if len(tmp) > len("summary.json")+TempExtra {
			t.Errorf("%q is longer than TempExtra allows", tmp)
		}
	}
}

// A folder of rsag's inside the directory (a large world's ranks/) is
// reached without following a link: a link planted at the folder's name
// is refused by every way in, with its target, and the directory it
// points to is left as it was; a real folder works.
func TestAFolderIsReachedWithoutFollowingALink(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(dir, "ranks")); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(elsewhere, "rank0_timings.csv")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	var le *LinkError
	if err := WriteIn(dir, "ranks/rank0_timings.csv", []byte("x")); !errors.As(err, &le) || le.Target != elsewhere {
		t.Errorf("WriteIn through a linked folder: %v", err)
	}
	if _, err := OpenIn(dir, "ranks/rank0_timings.csv", os.O_RDONLY, 0); !errors.As(err, &le) {
		t.Errorf("OpenIn through a linked folder: %v", err)
	}
	if err := Remove(dir, "ranks/rank0_timings.csv"); !errors.As(err, &le) {
		t.Errorf("Remove through a linked folder: %v", err)
	}
	if err := MkdirIn(dir, "ranks"); !errors.As(err, &le) {
		t.Errorf("MkdirIn over a link: %v", err)
	}
	untouched(t, victim)
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 1 {
		t.Errorf("the linked directory now holds %v", entries)
	}

	real := t.TempDir()
	if err := os.WriteFile(filepath.Join(real, "ranks"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var ke *KindError
	if err := MkdirIn(real, "ranks"); !errors.As(err, &ke) {
		t.Errorf("MkdirIn over a regular file: %v", err)
	}
	if err := WriteIn(real, "ranks/x", nil); !errors.As(err, &ke) {
		t.Errorf("WriteIn through a regular file: %v", err)
	}
	os.Remove(filepath.Join(real, "ranks"))
	for range 2 { // a folder already there is taken
		if err := MkdirIn(real, "ranks"); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteIn(real, "ranks/rank1_timings.csv", []byte("row\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadIn(real, "ranks/rank1_timings.csv", 100); err != nil || string(b) != "row\n" {
		t.Errorf("ReadIn: %q, %v", b, err)
	}
	if err := RemoveDirIn(real, "ranks"); err != nil {
		t.Errorf("RemoveDirIn of a folder still holding a file: %v, want it left quietly", err)
	}
	if err := Remove(real, "ranks/rank1_timings.csv"); err != nil {
		t.Fatal(err)
	}
	if err := RemoveDirIn(real, "ranks"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(real, "ranks")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the empty folder is still there: %v", err)
	}
}

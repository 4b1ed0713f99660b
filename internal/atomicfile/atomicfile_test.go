package atomicfile

import (
	"errors"
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

// A name with a slash would pass through a directory: refused.
func TestOnlyBaseNames(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a/b", "..", ".", ""} {
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

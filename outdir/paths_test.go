package outdir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rsag/internal/atomicfile"
)

func isTestOutput(name string) bool { return name == "summary.json" || name == "time_vs_size.png" }

// victim is a file outside dir that a planted link points to.
func victim(t *testing.T) string {
	t.Helper()
	v := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(v, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	return v
}

func victimUntouched(t *testing.T, v string) {
	t.Helper()
	if b, err := os.ReadFile(v); err != nil || string(b) != "victim" {
		t.Errorf("the victim now holds %q (%v)", b, err)
	}
}

// A link or a directory at any name of rsag's is refused, named; the
// user's own links and directories under other names are not rsag's
// business.
func TestCheckEntries(t *testing.T) {
	for _, name := range []string{RunFile, LockFile, notePrefix + "1", ProbePrefix + "ab", WriteTestPrefix + "1",
		"summary.json", "time_vs_size.png", ".summary.json.tmp12", ".run.json.tmp3"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			v := victim(t)
			os.Symlink(v, filepath.Join(dir, name))
			err := CheckEntries(dir, isTestOutput)
			var le *atomicfile.LinkError
			if !errors.As(err, &le) || le.Target != v || le.Path != filepath.Join(dir, name) {
				t.Errorf("a link at %s: %v", name, err)
			}
			os.Remove(filepath.Join(dir, name))
			os.Mkdir(filepath.Join(dir, name), 0o755)
			err = CheckEntries(dir, isTestOutput)
			var ke *atomicfile.KindError
			if !errors.As(err, &ke) || ke.Kind != "a directory" || !strings.Contains(err.Error(), filepath.Join(dir, name)+" is a directory") {
				t.Errorf("a directory at %s: %v", name, err)
			}
		})
	}
	dir := t.TempDir()
	os.Symlink(victim(t), filepath.Join(dir, "my-link"))
	os.Mkdir(filepath.Join(dir, "plots"), 0o755)
	os.WriteFile(filepath.Join(dir, "summary.json"), nil, 0o644)
	if err := CheckEntries(dir, isTestOutput); err != nil {
		t.Errorf("%v; a user's own names, and a regular file of rsag's, are for the survey", err)
	}
	if err := CheckEntries(filepath.Join(dir, "none"), isTestOutput); err != nil {
		t.Errorf("a dir yet to be made: %v", err)
	}
}

// The lock, the notes and run.json are never reached through a link.
func TestNoWriterFollowsALink(t *testing.T) {
	t.Run("lock", func(t *testing.T) {
		dir, v := t.TempDir(), victim(t)
		os.Symlink(v, filepath.Join(dir, LockFile))
		if _, err := Acquire(dir, me); !strings.Contains(err.Error(), LockFile+" is a symbolic link to "+v) {
			t.Errorf("got %v", err)
		}
		victimUntouched(t, v)
	})
	t.Run("notes", func(t *testing.T) {
		dir, v := t.TempDir(), victim(t)
		os.Symlink(v, filepath.Join(dir, notePrefix+"1"))
		LeaveNote(dir, 1, "rank 1 failed")
		if err := ClearNotes(dir); !strings.Contains(fmt.Sprint(err), "is a symbolic link to "+v) {
			t.Errorf("ClearNotes: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, notePrefix+"1")); err != nil {
			t.Errorf("ClearNotes removed a link that is not rsag's: %v", err)
		}
		if n := Notes(dir); len(n) != 0 {
			t.Errorf("a note read through a link: %v", n)
		}
		victimUntouched(t, v)
	})
	t.Run("run.json", func(t *testing.T) {
		dir, v := t.TempDir(), victim(t)
		os.Symlink(v, filepath.Join(dir, RunFile))
		if err := WriteRecord(dir, Record{Status: StatusRunning}); !strings.Contains(fmt.Sprint(err), "is a symbolic link to "+v) {
			t.Errorf("WriteRecord: %v", err)
		}
		if _, err := ReadRecord(dir); err == nil {
			t.Error("ReadRecord read through a link")
		}
		victimUntouched(t, v)
	})
}

// Names and paths that cannot be written are found before anything is
// made.
func TestCheckPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := CheckPaths(dir, []string{"summary.json", strings.Repeat("x", 255-atomicfile.TempExtra)}); err != nil {
		t.Errorf("names that fit: %v", err)
	}
	long := "time_vs_size_" + strings.Repeat("r", 300) + ".png"
	err := CheckPaths(dir, []string{"summary.json", long})
	var ne *NameError
	if !errors.As(err, &ne) || ne.Name != long || ne.Max != 255 || ne.Len != len(long)+atomicfile.TempExtra {
		t.Errorf("a name too long: %v", err)
	}
	if !strings.Contains(err.Error(), "would need a name of 332 bytes (with the suffix of its temporary file), above the 255 bytes") ||
		!strings.Contains(err.Error(), "... (317 bytes)") {
		t.Errorf("message %q", err)
	}
	deep := filepath.Join(t.TempDir(), strings.Repeat(strings.Repeat("d", 200)+"/", 21))
	if err := CheckPaths(deep, []string{"summary.json"}); err == nil || !strings.Contains(err.Error(), "above Linux's limit of 4096 bytes on a path") {
		t.Errorf("a path too long: %v", err)
	}
	if err := CheckPaths(filepath.Join(t.TempDir(), strings.Repeat("c", 256)), nil); err == nil || !strings.Contains(err.Error(), "a component of 256 bytes") {
		t.Errorf("a component too long: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("CheckPaths made something: %v", err)
	}
}

// MakeDir says which levels it made; RemoveMade removes exactly those,
// and only while they are empty.
func TestMakeDirAndRemoveMade(t *testing.T) {
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "a"), 0o755)
	dir := filepath.Join(root, "a", "b", "c")
	made, err := MakeDir(dir)
	if err != nil || len(made) != 2 || made[0] != dir || made[1] != filepath.Join(root, "a", "b") {
		t.Fatalf("made %v, %v", made, err)
	}
	RemoveMade(made)
	if _, err := os.Stat(filepath.Join(root, "a", "b")); !os.IsNotExist(err) {
		t.Errorf("a level it made is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); err != nil {
		t.Errorf("a level it did not make was removed: %v", err)
	}
	made, _ = MakeDir(dir)
	os.WriteFile(filepath.Join(dir, "mine"), nil, 0o644)
	RemoveMade(made)
	if _, err := os.Stat(filepath.Join(dir, "mine")); err != nil {
		t.Errorf("a file put there since was removed: %v", err)
	}
	if made, err := MakeDir(dir); err != nil || len(made) != 0 {
		t.Errorf("an existing dir: made %v, %v", made, err)
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	if err := CheckWritable(dir); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("left %v", entries)
	}
}

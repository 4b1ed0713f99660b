package outdir

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestNotes(t *testing.T) {
	dir := t.TempDir()
	if n := Notes(dir); n != nil {
		t.Errorf("no notes yet: %v", n)
	}
	LeaveNote(dir, 12, "rank 12 (b): watchdog: timing all-reduce did not finish\n")
	LeaveNote(dir, 3, "rank 3 (a): starting the nccl backend: out of memory")
	os.WriteFile(filepath.Join(dir, notePrefix+"x"), []byte("not a rank"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the user's"), 0o644)
	want := []Note{{3, "rank 3 (a): starting the nccl backend: out of memory"}, {12, "rank 12 (b): watchdog: timing all-reduce did not finish"}}
	if got := Notes(dir); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if err := ClearNotes(dir); err != nil {
		t.Fatal(err)
	}
	if got := left(t, dir); !reflect.DeepEqual(got, []string{"notes.txt"}) {
		t.Errorf("after ClearNotes: %v", got)
	}
	LeaveNote(filepath.Join(dir, "missing"), 1, "nowhere to go") // best effort: no panic, no file
}

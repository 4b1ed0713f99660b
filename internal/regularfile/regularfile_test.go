package regularfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte(strings.Repeat("x", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(file, 100); err != nil || len(data) != 100 {
		t.Errorf("a file of exactly the limit: %d bytes, %v", len(data), err)
	}
	var size *SizeError
	if _, err := Read(file, 99); !errors.As(err, &size) || size.Size != 100 || size.Limit != 99 {
		t.Errorf("a file over the limit: %v", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(link, 100); err != nil || len(data) != 100 {
		t.Errorf("a symlink to a regular file: %d bytes, %v", len(data), err)
	}
	if _, err := Read(filepath.Join(dir, "none"), 100); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	for _, c := range []struct{ path, kind string }{
		{dir, "a directory"},
		{"/dev/zero", "a character device"},
	} {
		var kind *KindError
		if _, err := Read(c.path, 100); !errors.As(err, &kind) || kind.Kind != c.kind {
			t.Errorf("Read(%s) = %v, want %s", c.path, err, c.kind)
		}
	}
}

// A FIFO is refused by its kind at once: opening it for reading would wait
// for a writer that may never come.
func TestAFIFOIsRefusedWithoutWaiting(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(fifo, 100); done <- err }()
	select {
	case err := <-done:
		var kind *KindError
		if !errors.As(err, &kind) || kind.Kind != "a named pipe (FIFO)" || kind.Path != fifo {
			t.Errorf("a FIFO: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Read of a FIFO without a writer did not return within 20 s")
	}
}

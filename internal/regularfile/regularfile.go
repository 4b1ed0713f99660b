// Package regularfile reads an input file that must be a regular file of a
// bounded size: a config, a summary to compare. Anything else is refused by
// its kind before a byte is read, so that a FIFO cannot block the reader
// (opening one waits for a writer), a device cannot feed it without end
// (/dev/zero) and a directory is named as one.
package regularfile

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// KindError is a path that is not a regular file.
type KindError struct {
	Path string
	Kind string // "a directory", "a named pipe (FIFO)", ...
}

func (e *KindError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, e.Kind)
}

// SizeError is a file larger than the reader's limit.
type SizeError struct {
	Path  string
	Size  int64 // its size when stat knew it; -1 when it grew past Limit while being read
	Limit int64
}

func (e *SizeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("%s grew past %d bytes while it was read", e.Path, e.Limit)
	}
	return fmt.Sprintf("%s is %d bytes, more than %d", e.Path, e.Size, e.Limit)
}

// Read returns the contents of the regular file at path, reading at most
// limit+1 bytes. A path that is not a regular file (after following
// symlinks) is a *KindError, one larger than limit a *SizeError; other
// failures are the *fs.PathError of the call that failed.
func Read(path string, limit int64) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, st, limit); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path have become a FIFO since the Stat, the
	// open returns at once instead of waiting for a writer, and the check
	// of what was opened refuses it. A regular file ignores the flag.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(path, st, limit); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &SizeError{Path: path, Size: -1, Limit: limit}
	}
	return data, nil
}

func check(path string, st fs.FileInfo, limit int64) error {
	m := st.Mode()
	if m.IsRegular() {
		if st.Size() > limit {
			return &SizeError{Path: path, Size: st.Size(), Limit: limit}
		}
		return nil
	}
	kind := "a special file"
	switch {
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		kind = "a character device"
	case m&fs.ModeDevice != 0:
		kind = "a block device"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	}
	return &KindError{Path: path, Kind: kind}
}

package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxFileBytes caps a config file at 1 MiB. A config is a few kilobytes at
// most, so anything larger is a mistake (-config /dev/zero, a results
// file), refused with its size before it is read whole.
const MaxFileBytes = 1 << 20

// ReadFile reads a config file, reading never more than MaxFileBytes+1
// bytes. It refuses what is not a file (a directory, a device, a socket)
// and a file larger than the cap, naming the size. A pipe is read (-config
// <(generate) works), up to the cap.
func ReadFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	if err := checkFileKind(path, st); err != nil {
		return nil, err
	}
	if st.Mode().IsRegular() && st.Size() > MaxFileBytes {
		return nil, tooLarge(path, fmt.Sprintf("%d bytes", st.Size()))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	defer f.Close()
	// The path may have been replaced since Stat: check what was opened.
	if st, err = f.Stat(); err != nil {
		return nil, fileError(path, err)
	}
	if err := checkFileKind(path, st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fileError(path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, tooLarge(path, fmt.Sprintf("more than %d bytes", MaxFileBytes))
	}
	return data, nil
}

func checkFileKind(path string, st fs.FileInfo) error {
	m := st.Mode()
	var what string
	switch {
	case m.IsRegular(), m&fs.ModeNamedPipe != 0:
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	default:
		what = "a special file"
	}
	return &Error{Source: path, Msg: "is " + what + ", not a TOML file"}
}

func tooLarge(path, size string) error {
	return &Error{Source: path, Msg: fmt.Sprintf("is %s, larger than rsag's cap of %d bytes (1 MiB) on a config file: is it the config?", size, MaxFileBytes)}
}

func fileError(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &Error{Source: path, Msg: "no such file"}
	}
	var perr *fs.PathError
	if errors.As(err, &perr) {
		err = perr.Err
	}
	return &Error{Source: path, Msg: err.Error()}
}

package config

import (
	"errors"
	"fmt"
	"io/fs"

	"rsag/internal/regularfile"
)

// MaxFileBytes caps a config file at 1 MiB. A config is a few kilobytes at
// most, so anything larger is a mistake (a results file, a log), refused
// with its size before it is read whole.
const MaxFileBytes = 1 << 20

// ReadFile reads a config file, reading never more than MaxFileBytes+1
// bytes. It refuses what is not a regular file (a directory, a device, a
// socket, a FIFO) by its kind, before opening it for a read that could
// block or never end, and a file larger than the cap, naming the size.
//
// A pipe is refused too, though a shell's -config <(generate) is one: rank
// 0 reads the config while the other ranks wait for it, and a FIFO without
// a writer would keep them all waiting; and under mpirun or srun the ranks
// do not inherit the shell's /dev/fd/N anyway.
func ReadFile(path string) ([]byte, error) {
	data, err := regularfile.Read(path, MaxFileBytes)
	var kind *regularfile.KindError
	var size *regularfile.SizeError
	switch {
	case err == nil:
		return data, nil
	case errors.As(err, &kind):
		msg := "is " + kind.Kind + ", not a TOML file: give a regular file"
		if kind.Kind == "a named pipe (FIFO)" {
			msg += " (write what the pipe would give to a file first: rank 0 reads the config while every other rank waits for it)"
		}
		return nil, &Error{Source: path, Msg: msg}
	case errors.As(err, &size) && size.Size >= 0:
		return nil, tooLarge(path, fmt.Sprintf("%d bytes", size.Size))
	case errors.As(err, &size):
		return nil, tooLarge(path, fmt.Sprintf("more than %d bytes", MaxFileBytes))
	}
	return nil, fileError(path, err)
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

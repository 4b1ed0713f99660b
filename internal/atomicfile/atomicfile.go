// Package atomicfile writes a file so that a reader never sees it half
// written: to a temporary file beside it, renamed into place.
package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
)

// Write writes data to path through a temporary file in the same directory,
// renamed into place. The file is 0644: os.CreateTemp creates 0600, and
// results on a cluster are for everyone who can read the directory, as a
// plain create would make them. On failure the temporary file is removed.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix+filepath.Base(path)+tempSuffix+"*")
	if err != nil {
		return err
	}
	werr := tmp.Chmod(0o644)
	if werr == nil {
		_, werr = tmp.Write(data)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}

// A temporary file of NAME is ".NAME.tmp" and the digits os.CreateTemp
// adds.
const (
	tempPrefix = "."
	tempSuffix = ".tmp"
)

// TargetOf returns the file that name (a base name) is a temporary file
// of, when it is one of Write's.
func TargetOf(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, tempSuffix)
	if i <= 0 || strings.Trim(rest[i+len(tempSuffix):], "0123456789") != "" {
		return "", false
	}
	return rest[:i], true
}

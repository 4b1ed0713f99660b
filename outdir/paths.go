// paths.go checks, before a run creates anything, that every file it will
// write in its output dir can be written there: each name fits the file
// system's limit, each path Linux's, and nothing but a regular file (or
// nothing at all) holds a name of rsag's (a link planted there, a
// directory in a file's place). It also makes the directory, remembering
// which levels it made, so that a run refused afterwards removes exactly
// those, and leaves nothing behind.

package outdir

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"rsag/internal/atomicfile"
)

// WriteTestPrefix starts the name of the file CheckWritable writes and
// removes again.
const WriteTestPrefix = ".rsag-write-test"

// Ours reports whether name (a base name) is one that rsag may create in
// an output dir: run.json, the lock, a note, a heartbeat, a probe, a
// write test, an output (isOutput: report.IsOutput), or a temporary of any of these.
func Ours(name string, isOutput func(string) bool) bool {
	folder, base := path.Split(name)
	if t, ok := atomicfile.TargetOf(base); ok {
		name = folder + t
	}
	return name == RunFile || name == LockFile || isOutput(name) ||
		strings.HasPrefix(name, notePrefix) || strings.HasPrefix(name, BeatPrefix) || strings.HasPrefix(name, ProbePrefix) || strings.HasPrefix(name, WriteTestPrefix)
}

// notRegular is the refusal of an entry of dir that is not a regular
// file (a *atomicfile.LinkError naming its target, or a
// *atomicfile.KindError), nil for a regular file.
func notRegular(dir string, e fs.DirEntry) error {
	path := filepath.Join(dir, e.Name())
	t := e.Type()
	if t.IsRegular() {
		return nil
	}
	if t&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		return &atomicfile.LinkError{Path: path, Target: target}
	}
	return &atomicfile.KindError{Path: path, Kind: atomicfile.Kind(t)}
}

// CheckEntries refuses a directory in which a name rsag may write (Ours)
// is held by anything but a regular file: a symbolic link, which rsag will
// not follow (nor replace: whoever made it may mean it), or a directory,
// FIFO or socket, into which it could not write its file. Nothing else in
// dir is looked at. A dir that does not exist holds nothing.
func CheckEntries(dir string, isOutput func(string) bool) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENOTDIR) {
		return nil // to be made; making it says what is in the way
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && isOutput(e.Name()+"/") {
			// A folder of rsag's (what holds its name when the run puts
			// files there, CheckFolder says): rsag's names in it are
			// regular files.
			inner, err := os.ReadDir(filepath.Join(dir, e.Name()))
			if err != nil {
				return err
			}
			for _, f := range inner {
				if Ours(e.Name()+"/"+f.Name(), isOutput) {
					if err := notRegular(filepath.Join(dir, e.Name()), f); err != nil {
						return err
					}
				}
			}
			continue
		}
		if Ours(e.Name(), isOutput) {
			if err := notRegular(dir, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// PathMax is Linux's limit on a path's length, its terminating NUL
// included: a longer one cannot be opened by any program.
const PathMax = unix.PathMax

// defaultNameMax is NAME_MAX where the file system does not say.
const defaultNameMax = 255

// OwnNames are the longest names of the files outdir itself writes for a
// run of world ranks: run.json, the lock, the last rank's note, a probe
// and a write test.
func OwnNames(world int) []string {
	return []string{RunFile, LockFile, notePrefix + strconv.Itoa(max(world-1, 0)),
		ProbePrefix + strings.Repeat("0", 32), WriteTestPrefix + strings.Repeat("0", 16)}
}

// NameError is a file name too long for the output dir's file system.
type NameError struct {
	Dir, Name string
	Len, Max  int // the longest name the file needs (its temporary's), the file system's limit
}

func (e *NameError) Error() string {
	return fmt.Sprintf("the file %s would need a name of %d bytes (with the suffix of its temporary file), "+
		"above the %d bytes a name may have on the file system of %s", clip(e.Name), e.Len, e.Max, clip(e.Dir))
}

// CheckPaths checks, creating nothing, that every name in names (base
// names: every file the run may write) can be written in dir: each
// component of dir and each name (with the longest temporary's suffix,
// atomicfile.TempExtra) fits the file system's name limit (a *NameError),
// and dir joined to each name fits PathMax.
func CheckPaths(dir string, names []string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// The file system of the nearest ancestor that exists is where dir
	// will be made (what is wrong with that ancestor, making it says).
	base := abs
	for {
		if _, err := os.Stat(base); err == nil || base == filepath.Dir(base) {
			break
		}
		base = filepath.Dir(base)
	}
	nameMax := defaultNameMax
	var sfs unix.Statfs_t
	if unix.Statfs(base, &sfs) == nil && sfs.Namelen > 0 {
		nameMax = int(sfs.Namelen)
	}
	for _, c := range strings.Split(abs, "/") {
		if len(c) > nameMax {
			return fmt.Errorf("the output dir's path has a component of %d bytes (%s), above the %d bytes a name may have there: "+
				"choose another -output-dir", len(c), clip(c), nameMax)
		}
	}
	longest := ""
	for _, n := range names {
		if len(n)+atomicfile.TempExtra > nameMax {
			return &NameError{Dir: dir, Name: n, Len: len(n) + atomicfile.TempExtra, Max: nameMax}
		}
		if len(n) > len(longest) {
			longest = n
		}
	}
	if n := len(abs) + 1 + len(longest) + 1; n > PathMax {
		return fmt.Errorf("its path is %d bytes long, and with its longest file, %s, %d: above Linux's limit of %d bytes "+
			"on a path (PATH_MAX, its final NUL included), past which no program can open it: choose a shorter -output-dir",
			len(abs), clip(longest), n-1, PathMax)
	}
	return nil
}

// CheckFolder refuses, for a run that writes files in the folder name of
// dir (report.RankFolder), anything but a directory or nothing at that
// name: a link, which rsag never follows, or a file.
func CheckFolder(dir, name string) error {
	fi, err := os.Lstat(filepath.Join(dir, name))
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENOTDIR), err == nil && fi.IsDir():
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(filepath.Join(dir, name))
		return &atomicfile.LinkError{Path: filepath.Join(dir, name), Target: target}
	}
	return fmt.Errorf("%s is %s, where rsag keeps a folder of its own (every rank's files, in a world this large): "+
		"move it away, or choose another -output-dir", filepath.Join(dir, name), atomicfile.Kind(fi.Mode().Type()))
}

// MakeDir makes dir and any missing parents, and returns the directories
// it made, deepest first, for RemoveMade.
func MakeDir(dir string) (made []string, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var missing []string
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || d == filepath.Dir(d) {
			break
		}
		missing = append(missing, d)
	}
	for _, d := range slices.Backward(missing) {
		err := os.Mkdir(d, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue // another rank, or another run, made it first
		}
		if err != nil {
			return made, err
		}
		made = append([]string{d}, made...)
	}
	// A level that exists but is no directory (a file, a link to one)
	// is refused here, by what mkdir -p would find.
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return made, err
	}
	return made, nil
}

// RemoveMade removes the directories MakeDir made, deepest first, when
// they are empty: rmdir(2) removes nothing else, so whatever another run
// or a user has put there since stays.
func RemoveMade(made []string) {
	for _, d := range made {
		if unix.Rmdir(d) != nil {
			return
		}
	}
}

// CheckWritable writes a file in dir and removes it again: a directory
// that exists may still refuse this user, or sit on a read-only or full
// file system.
func CheckWritable(dir string) error {
	for range 100 {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return err
		}
		name := fmt.Sprintf("%s%x", WriteTestPrefix, b)
		f, err := atomicfile.OpenIn(dir, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		f.Close()
		return atomicfile.Remove(dir, name)
	}
	return fmt.Errorf("%s: every write-test name tried exists", dir)
}

// clip is at most the first 80 bytes of s (whole characters) and its
// length, as config.Clip writes a value it repeats.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:i], len(s))
}

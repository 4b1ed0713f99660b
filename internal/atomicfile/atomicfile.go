// Package atomicfile is how rsag touches a file in an output directory:
// never through a symbolic link, and never half written.
//
// An output dir may sit on a cluster file system where other users can
// write into it. Whoever can plant a link there at a name rsag writes
// (`ln -s ~/victim OUT/.rsag.lock`) could make rsag overwrite any file its
// user can write. So every file rsag creates, opens, rewrites or removes
// there goes through OpenIn, Write or Remove, which reach it by its base
// name relative to a descriptor of the directory, with O_NOFOLLOW: a link
// at that name is refused (a *LinkError, naming what it points to), and so
// is anything that is not a regular file (a *KindError). A name may lie in
// a folder of rsag's inside the output dir ("ranks/rank7_timings.csv", a
// large world's per-rank files): each folder is reached the same way,
// relative to its parent's descriptor with O_NOFOLLOW, so a link planted
// at a folder's name is refused too.
//
// What this protects against: anything planted inside the output dir,
// before or during a run. What it does not: the path to the output dir
// itself, which is the user's and is resolved as given each time (a
// symlink the user made to it, or above it, is followed, as it should be).
//
// Write writes a file so that a reader never sees it half written: to a
// temporary file beside it, created exclusively (O_EXCL, so that nothing
// planted at a temporary's name is opened either), renamed into place.
package atomicfile

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LinkError is a name in an output dir that is a symbolic link, which rsag
// refuses to follow.
type LinkError struct {
	Path   string
	Target string // what the link points to, as it says; "" when it could not be read
}

func (e *LinkError) Error() string {
	target := e.Target
	if target == "" {
		target = "(unreadable)"
	}
	return fmt.Sprintf("%s is a symbolic link to %s, which rsag did not make: rsag never follows a link in an output dir, "+
		"since whoever can write there could aim it at any file you can write; remove the link, or choose another -output-dir",
		e.Path, target)
}

// KindError is a name in an output dir where rsag writes a file, held by
// something that is not a regular file: a directory, a FIFO, a socket.
type KindError struct {
	Path string
	Kind string // "a directory", "a named pipe (FIFO)", ...
}

func (e *KindError) Error() string {
	return fmt.Sprintf("%s is %s, where rsag writes a file of its own: move it away, or choose another -output-dir", e.Path, e.Kind)
}

// Kind names what a file mode is, for messages: "a directory", ...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// openDir opens dir itself, following whatever links its path holds: the
// path is the user's.
func openDir(dir string) (int, error) {
	if dir == "" {
		dir = "."
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	return fd, nil
}

// checkName refuses a name that is not a plain relative one: folders and
// a base name, none of them empty, "." or "..".
func checkName(dir, name string) error {
	for _, c := range strings.Split(name, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("%q is not a file name in %s", name, dir)
		}
	}
	return nil
}

// openParent opens the folder that holds name in dir: dir itself (its
// path is the user's, links followed), then each folder of name, which is
// rsag's, without following a link (a *LinkError) and only a directory (a
// *KindError). It returns the folder's descriptor, its path and name's
// base name.
func openParent(dir, name string) (int, string, string, error) {
	if err := checkName(dir, name); err != nil {
		return -1, "", "", err
	}
	dirfd, err := openDir(dir)
	if err != nil {
		return -1, "", "", err
	}
	parts := strings.Split(name, "/")
	for _, c := range parts[:len(parts)-1] {
		fd, err := unix.Openat(dirfd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			var st unix.Stat_t
			serr := unix.Fstatat(dirfd, c, &st, unix.AT_SYMLINK_NOFOLLOW)
			switch {
			case serr == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
				err = linkError(dirfd, dir, c)
			case serr == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR:
				err = &KindError{Path: filepath.Join(dir, c), Kind: Kind(modeOf(st.Mode))}
			default:
				err = &fs.PathError{Op: "open", Path: filepath.Join(dir, c), Err: err}
			}
			unix.Close(dirfd)
			return -1, "", "", err
		}
		unix.Close(dirfd)
		dirfd, dir = fd, filepath.Join(dir, c)
	}
	return dirfd, dir, parts[len(parts)-1], nil
}

// MkdirIn makes the folder name in dir (see openParent), 0755; one that
// is there is taken when it is a directory, not a link to one.
func MkdirIn(dir, name string) error {
	dirfd, parent, base, err := openParent(dir, name)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	err = unix.Mkdirat(dirfd, base, 0o755)
	if errors.Is(err, unix.EEXIST) {
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return &fs.PathError{Op: "stat", Path: filepath.Join(parent, base), Err: err}
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			return nil
		case unix.S_IFLNK:
			return linkError(dirfd, parent, base)
		default:
			return &KindError{Path: filepath.Join(parent, base), Kind: Kind(modeOf(st.Mode))}
		}
	}
	if err != nil {
		return &fs.PathError{Op: "mkdir", Path: filepath.Join(parent, base), Err: err}
	}
	return nil
}

// RemoveDirIn removes the folder name in dir when it is empty (rmdir,
// never following a link); one that still holds anything stays, and is
// not an error.
func RemoveDirIn(dir, name string) error {
	dirfd, parent, base, err := openParent(dir, name)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	err = unix.Unlinkat(dirfd, base, unix.AT_REMOVEDIR)
	if err == nil || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return &fs.PathError{Op: "rmdir", Path: filepath.Join(parent, base), Err: err}
}

// linkError says what the link at name in dirfd points to.
func linkError(dirfd int, dir, name string) error {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	target := ""
	if err == nil {
		target = string(buf[:n])
	}
	return &LinkError{Path: filepath.Join(dir, name), Target: target}
}

// OpenIn opens the file name, a base name, in the directory dir with flag
// (os.O_RDONLY, os.O_RDWR|os.O_CREATE, ...) and, when it creates it, perm
// (less the umask). It never follows a symbolic link at name (a
// *LinkError) and opens nothing but a regular file (a *KindError: a FIFO
// is refused without waiting for a writer, a directory named as one). It
// is the one way rsag opens a file in an output dir; Write and Remove are
// built on the same rule.
func OpenIn(dir, name string, flag int, perm os.FileMode) (*os.File, error) {
	dirfd, parent, base, err := openParent(dir, name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	return openAt(dirfd, parent, base, flag, perm)
}

func openAt(dirfd int, dir, name string, flag int, perm os.FileMode) (*os.File, error) {
	path := filepath.Join(dir, name)
	// O_NONBLOCK: a FIFO opens at once instead of waiting, and is then
	// refused by its kind; it is cleared again for the regular file.
	fd, err := unix.Openat(dirfd, name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, linkError(dirfd, dir, name)
	case errors.Is(err, unix.EISDIR):
		return nil, &KindError{Path: path, Kind: "a directory"}
	case errors.Is(err, unix.ENXIO):
		return nil, &KindError{Path: path, Kind: "a named pipe (FIFO) or socket"}
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &KindError{Path: path, Kind: Kind(modeOf(st.Mode))}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// modeOf turns a stat(2) mode's type bits into an fs.FileMode's.
func modeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return 0
}

// Write writes data to path through a temporary file in the same directory,
// renamed into place (Prepare, then Commit). The file is 0644: results on
// a cluster are for everyone who can read the directory, as a plain
// create would make them. The temporary is created exclusively and
// without following links; a link or anything but a regular file at path
// itself is refused, not replaced (see OpenIn). On failure the temporary
// file is removed.
func Write(path string, data []byte) error {
	p, err := Prepare(path, data)
	if err != nil {
		return err
	}
	return p.Commit()
}

// ExistsError is a regular file at a name rsag was asked to write that
// rsag may not replace: one it did not write, or one of the inputs of the
// command writing it.
type ExistsError struct {
	Path string
	Why  string // "it is not a file rsag wrote", "it is the input ..."
}

func (e *ExistsError) Error() string { return fmt.Sprintf("%s exists: %s", e.Path, e.Why) }

// HeadBytes is how much of an existing file Replace shows its ours check.
const HeadBytes = 4096

// Replace is Write under the one rule about a file that is already there,
// for a file rsag writes outside an output dir's manifest (rsag report
// -html, rsag compare -html): a regular file at path is replaced only when
// ours, shown its first HeadBytes bytes, says rsag wrote it; any other is
// an *ExistsError, left as it is. (A link or a non-regular file is refused
// by Write's own rule.) ours nil replaces any regular file: the user said
// so (-overwrite).
func Replace(path string, data []byte, ours func(head []byte) bool) error {
	if ours != nil {
		dir, name := filepath.Split(path)
		f, err := OpenIn(filepath.Clean(dir), name, os.O_RDONLY, 0)
		var pe *fs.PathError
		switch {
		case errors.As(err, &pe) && errors.Is(pe.Err, unix.ENOENT):
			// nothing there: a new file
		case err != nil:
			return err
		default:
			head, rerr := io.ReadAll(io.LimitReader(f, HeadBytes))
			f.Close()
			if rerr != nil {
				return rerr
			}
			if !ours(head) {
				return &ExistsError{Path: path, Why: "it is not a file rsag wrote"}
			}
		}
	}
	return Write(path, data)
}

// Prepared is a file written in full to its temporary, not yet renamed
// into place: its data has its space on the file system, and Commit, a
// rename, needs none. A run's last step uses it to make its final state
// one step that a full disk cannot stop half way.
type Prepared struct {
	dir, name, tmp string
	dirfd          int
}

// Prepare writes data to a fresh temporary file of path, as Write does,
// and leaves it there for Commit or Abort.
func Prepare(path string, data []byte) (*Prepared, error) {
	dir, name := filepath.Split(path)
	return PrepareIn(filepath.Clean(dir), name, data)
}

// WriteIn is Write of the file name in dir, where name may lie in folders
// of rsag's (see openParent).
func WriteIn(dir, name string, data []byte) error {
	p, err := PrepareIn(dir, name, data)
	if err != nil {
		return err
	}
	return p.Commit()
}

// PrepareIn is Prepare of the file name in dir (see WriteIn).
func PrepareIn(dir, name string, data []byte) (*Prepared, error) {
	dirfd, dir, name, err := openParent(dir, name)
	if err != nil {
		return nil, err
	}
	tmp, tmpName, err := createTemp(dirfd, dir, name)
	if err != nil {
		unix.Close(dirfd)
		return nil, err
	}
	werr := tmp.Chmod(0o644)
	if werr == nil {
		_, werr = tmp.Write(data)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	p := &Prepared{dir: dir, name: name, tmp: tmpName, dirfd: dirfd}
	if werr != nil {
		p.Abort()
		return nil, werr
	}
	return p, nil
}

// Commit renames the temporary into place; on failure it is removed.
func (p *Prepared) Commit() error {
	err := renameInto(p.dirfd, p.dir, p.tmp, p.name)
	if err != nil {
		unix.Unlinkat(p.dirfd, p.tmp, 0)
	}
	unix.Close(p.dirfd)
	return err
}

// Abort removes the temporary.
func (p *Prepared) Abort() {
	unix.Unlinkat(p.dirfd, p.tmp, 0)
	unix.Close(p.dirfd)
}

// renameInto renames the temporary from onto name in dirfd. rename(2)
// replaces a link at name rather than writing through it, so a link that
// appears between the check and the rename is only dropped; the check is
// there to refuse, by name, one that was there first.
func renameInto(dirfd int, dir, from, name string) error {
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return linkError(dirfd, dir, name)
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &KindError{Path: filepath.Join(dir, name), Kind: Kind(modeOf(st.Mode))}
	}
	if err := unix.Renameat(dirfd, from, dirfd, name); err != nil {
		return &os.LinkError{Op: "rename", Old: filepath.Join(dir, from), New: filepath.Join(dir, name), Err: err}
	}
	return nil
}

// createTemp creates a fresh temporary file of name in dirfd.
func createTemp(dirfd int, dir, name string) (*os.File, string, error) {
	for range 100 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, "", err
		}
		tmpName := TempName(name, binary.LittleEndian.Uint32(b[:]))
		f, err := openAt(dirfd, dir, tmpName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		return f, tmpName, nil
	}
	return nil, "", fmt.Errorf("creating a temporary file for %s: every name tried exists", filepath.Join(dir, name))
}

// Remove removes the file name, a base name, from dir: unlinkat(2), which
// never follows a link and never removes a directory.
func Remove(dir, name string) error {
	dirfd, dir, name, err := openParent(dir, name)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if err := unix.Unlinkat(dirfd, name, 0); err != nil {
		return &fs.PathError{Op: "remove", Path: filepath.Join(dir, name), Err: err}
	}
	return nil
}

// ReadIn reads the regular file name in dir, at most limit bytes, without
// following a link (see OpenIn); a longer file is an error.
func ReadIn(dir, name string, limit int64) ([]byte, error) {
	f, err := OpenIn(dir, name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a file rsag wrote", f.Name(), limit)
	}
	return data, nil
}

// SameFile reports whether f is the file now at name in dir (not
// following a link there).
func SameFile(f *os.File, dir, name string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(filepath.Join(dir, name))
	return err == nil && os.SameFile(a, b)
}

// A temporary file of NAME is ".NAME.tmp" and up to ten digits.
const (
	tempPrefix = "."
	tempSuffix = ".tmp"
	// TempExtra is how many bytes a temporary's name adds to its file's at
	// most: the prefix, the suffix and ten digits.
	TempExtra = len(tempPrefix) + len(tempSuffix) + 10
)

// TempName is the temporary file of name with the number n.
func TempName(name string, n uint32) string {
	return tempPrefix + name + tempSuffix + strconv.FormatUint(uint64(n), 10)
}

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

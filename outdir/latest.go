// latest.go gives a run started without -output-dir a directory of its
// own under DefaultRoot, named for when it started and its config, and
// points DefaultRoot/latest at the newest: a person can run the same
// command again and again, and nothing is ever overwritten.

package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"rsag/internal/atomicfile"
)

// DefaultRoot holds the run dirs of runs given no -output-dir, and
// LatestLink, in it, points to the newest of them.
const (
	DefaultRoot = "results"
	LatestLink  = "latest"
)

// runDirTime is the run dir's time stamp: it sorts by time, as ls does.
const runDirTime = "20060102-150405"

// NewRunDir makes a directory of this run's own under root, named
// <date>-<time>-<stem> (with -2, -3, ... when a run started in the same
// second already has that name: mkdir(2) decides, so two runs at once
// never share one), and returns its path and the directories it made,
// deepest first, for RemoveMade. Only rank 0 calls it: the others are
// told the name.
func NewRunDir(root, stem string, now time.Time) (dir string, made []string, err error) {
	made, err = MakeDir(root)
	if err != nil {
		return "", made, fmt.Errorf("%s, where each run given no -output-dir gets a directory of its own: %w", root, err)
	}
	base := now.Format(runDirTime) + "-" + stem
	for i := 1; i <= 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		dir = filepath.Join(root, name)
		err := os.Mkdir(dir, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", made, err
		}
		abs, _ := filepath.Abs(dir)
		return dir, append([]string{abs}, made...), nil
	}
	return "", made, fmt.Errorf("%s: 1000 runs of %s started within one second; give -output-dir", root, stem)
}

// Stem is the part of a run dir's name that says which config it ran:
// the config file's name without its extension, in characters that need
// no quoting in a shell.
func Stem(configPath string) string {
	name := strings.TrimSuffix(filepath.Base(configPath), filepath.Ext(configPath))
	stem := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, name)
	if len(stem) > 64 {
		stem = stem[:64]
	}
	if stem == "" || stem == "." || stem == ".." {
		stem = "run"
	}
	return stem
}

// NotOursError is a root/latest that rsag did not make: a file, a
// directory or a link of someone else's. It is left as it is.
type NotOursError struct {
	Path, What string
}

func (e *NotOursError) Error() string {
	return fmt.Sprintf("%s is %s that rsag did not make: left as it is (move it away, and the next run makes the link)", e.Path, e.What)
}

// PointLatest points root/latest at dir (a directory in root), replacing
// the link atomically (a new link renamed over the old one), so that a
// reader sees the previous run or this one, never neither. It replaces
// nothing but a link rsag made, one whose target is a bare name in root;
// anything else there is a *NotOursError, and left alone.
func PointLatest(root, dir string) error {
	if filepath.Clean(filepath.Dir(dir)) != filepath.Clean(root) {
		return fmt.Errorf("%s is not a directory in %s", dir, root)
	}
	link := filepath.Join(root, LatestLink)
	if fi, err := os.Lstat(link); err == nil {
		if fi.Mode()&fs.ModeSymlink == 0 {
			return &NotOursError{Path: link, What: atomicfile.Kind(fi.Mode())}
		}
		target, err := os.Readlink(link)
		if err != nil {
			return err
		}
		if !madeByUs(target) {
			return &NotOursError{Path: link, What: "a link to " + clip(target)}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	host, _ := os.Hostname() // results/ may be shared by hosts whose pids collide
	tmp := filepath.Join(root, fmt.Sprintf(".%s.%s.%d.tmp", LatestLink, host, os.Getpid()))
	os.Remove(tmp) // a crashed run's own, by its host and pid: never a name a user picks
	if err := os.Symlink(filepath.Base(dir), tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// madeByUs reports whether a link's target is one PointLatest writes: a
// bare name (no directory), in the run dirs' form.
func madeByUs(target string) bool {
	if strings.ContainsRune(target, '/') || len(target) < len(runDirTime)+2 {
		return false
	}
	_, err := time.Parse(runDirTime, target[:len(runDirTime)])
	return err == nil && target[len(runDirTime)] == '-'
}

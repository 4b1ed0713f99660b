package outdir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"rsag/internal/atomicfile"
)

// NodeBeats is a node's heartbeat file: the last beat of every rank of
// the node, as its node-local memory held them when Writer wrote it.
type NodeBeats struct {
	Run     string    `json:"run"`
	Host    string    `json:"host"`
	Node    int       `json:"node"`
	Writer  int       `json:"writer"` // the rank that wrote it
	Written time.Time `json:"written"`
	Beats   []Beat    `json:"beats"`
}

// WriteNodeBeats writes n as dir's heartbeat file of its node,
// atomically; a link or anything but a regular file there is refused, not
// replaced (atomicfile.Write).
func WriteNodeBeats(dir string, n NodeBeats) error {
	data, err := json.Marshal(n)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, NodeBeatName(n.Node)), data)
}

// ReadBeats reads the heartbeats of run in dir, by rank, from every
// node's file (each beat Relayed when its file was written); a file of
// another run is left out. A file that cannot be read (a link planted
// there, a directory) is left out too, and said in the errors returned,
// so that a hang that misses a node's ranks says why.
func ReadBeats(dir, run string) (map[int]Beat, []error) {
	entries, _ := os.ReadDir(dir)
	out := map[int]Beat{}
	var errs []error
	for _, e := range entries {
		node, err := strconv.Atoi(strings.TrimPrefix(e.Name(), nodeBeatPrefix))
		if !strings.HasPrefix(e.Name(), nodeBeatPrefix) || err != nil || node < 0 {
			continue
		}
		data, err := atomicfile.ReadIn(dir, e.Name(), maxBeatBytes) // never through a planted link
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var n NodeBeats
		if json.NewDecoder(bytes.NewReader(data)).Decode(&n) != nil || n.Run != run || n.Node != node {
			continue
		}
		for _, b := range n.Beats {
			if b.Run != run || b.Host != n.Host {
				continue
			}
			b.Relayed = n.Written
			if o, ok := out[b.Rank]; !ok || b.Written.After(o.Written) {
				out[b.Rank] = b
			}
		}
	}
	return out, errs
}

// Merge puts into beats each of fresh (beats read from node-local memory)
// that is newer than the one it has.
func Merge(beats, fresh map[int]Beat) {
	for r, b := range fresh {
		if o, ok := beats[r]; !ok || !b.Written.Before(o.Written) {
			beats[r] = b
		}
	}
}

// LocalBeats is where the ranks of one node keep their beats between
// writes of the node's file: a directory in node-local memory (/dev/shm),
// one small file a rank, rewritten about once a second at no cost to the
// shared file system, and read by whichever rank of the node writes the
// node's file, and by rank 0 and its guard for their own node. Its name
// follows from the run's id, so that every rank of the node (and the
// guard, from run.json) finds it without a word.
type LocalBeats struct{ Dir string }

// localRoot is node-local memory where there is some, else the system's
// temporary directory (node-local on a cluster too).
func localRoot() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() && syscall.Access("/dev/shm", 2) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// LocalBeatsOf is the node-local beat directory on this node of run,
// writing into the output dir dir (as the ranks and rank 0's guard were
// given it). The dir is part of the key: a run's id (RunID) names its
// start in whole seconds, and two runs of one process (goroutine ranks of
// a test) started in the same second into different dirs are two runs,
// each with beats of its own; two live runs never share a dir (its lock).
func LocalBeatsOf(run, dir string) LocalBeats {
	sum := sha256.Sum256([]byte(run + "\x00" + dir))
	return LocalBeats{Dir: filepath.Join(localRoot(), "rsag-beats-"+hex.EncodeToString(sum[:8]))}
}

// make makes the directory, this user's alone; one that exists must be a
// directory of this user's, not a link (another user could plant one in
// /dev/shm, which every user may write).
func (l LocalBeats) make() error {
	err := os.Mkdir(l.Dir, 0o700)
	if err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	st, err := os.Lstat(l.Dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || (ok && int(sys.Uid) != os.Getuid()) {
		return fmt.Errorf("%s: not a directory of this user's: node-local heartbeats cannot be kept there", l.Dir)
	}
	return nil
}

func localName(rank int) string { return "rank" + strconv.Itoa(rank) }

// Write writes b as its rank's beat.
func (l LocalBeats) Write(b Beat) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	err = atomicfile.Write(filepath.Join(l.Dir, localName(b.Rank)), data)
	if errors.Is(err, os.ErrNotExist) {
		if err = l.make(); err == nil {
			err = atomicfile.Write(filepath.Join(l.Dir, localName(b.Rank)), data)
		}
	}
	return err
}

// Read is the beats of run kept here by ranks on host.
func (l LocalBeats) Read(run, host string) map[int]Beat {
	entries, _ := os.ReadDir(l.Dir)
	out := map[int]Beat{}
	for _, e := range entries {
		r, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "rank"))
		if !strings.HasPrefix(e.Name(), "rank") || err != nil {
			continue
		}
		data, err := atomicfile.ReadIn(l.Dir, e.Name(), maxBeatBytes)
		var b Beat
		if err != nil || json.NewDecoder(bytes.NewReader(data)).Decode(&b) != nil || b.Run != run || b.Rank != r || b.Host != host {
			continue
		}
		out[r] = b
	}
	return out
}

// Lock holds the node's lock on its beats (flock on a file in the
// directory) until the returned function is called: the ranks of a node
// that write its file at once (as they end) do so one at a time, each
// from what the others have kept, so that none writes over a newer
// ending with an older one.
func (l LocalBeats) Lock() (unlock func(), err error) {
	f, err := atomicfile.OpenIn(l.Dir, ".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		if err = l.make(); err == nil {
			f, err = atomicfile.OpenIn(l.Dir, ".lock", os.O_RDWR|os.O_CREATE, 0o600)
		}
	}
	if err != nil {
		return nil, err
	}
	// A holder that does not let go within lockWait was stopped (SIGSTOP)
	// as it wrote, and may never: waiting for it would stop every rank's
	// beat and ending on the node (seen: a stopped rank 0 kept its node's
	// other ranks from ending at their watchdog). The file is then written
	// without the lock.
	for give := time.Now().Add(lockWait); ; time.Sleep(10 * time.Millisecond) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(give) {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return func() {}, nil
			}
			return nil, err
		}
	}
}

// lockWait bounds the wait for the node's lock on its beats: a write
// holds it for milliseconds; a wait of a beat would age every beat.
const lockWait = BeatEvery / 2

// Remove removes the directory and every beat in it: once every rank of
// the node has ended, its file in the output dir holds their last beats.
func (l LocalBeats) Remove() {
	entries, _ := os.ReadDir(l.Dir)
	for _, e := range entries {
		_ = atomicfile.Remove(l.Dir, e.Name())
	}
	_ = os.Remove(l.Dir)
}

// Writer is the rank of ranks (a node's, ascending) that writes the
// node's file now: the first whose beat, in kept, is fresh (within
// BeatEvery and a half of now) and has not ended; self when none is. A
// writer that stops is replaced by the next within a beat or two.
func Writer(ranks []int, kept map[int]Beat, self int, now time.Time) int {
	i := slices.IndexFunc(ranks, func(r int) bool {
		b, ok := kept[r]
		return ok && b.Ended == "" && now.Sub(b.Written) <= BeatEvery*3/2
	})
	if i < 0 {
		return self
	}
	return ranks[i]
}

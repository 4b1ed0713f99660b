// shared.go checks that the output directory every rank was given is one
// directory that every rank sees: on a cluster, a file system all nodes share.
//
// Without the check a node-local directory (a node's own /tmp, or a path that
// exists on every node but is not shared) lets each node write its ranks'
// files into a directory of its own: rank 0 then writes the combined files
// and marks the run complete with other ranks' files missing. The check also
// catches ranks that were given different -output-dir values.

package outdir

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"rsag/internal/atomicfile"
	"rsag/internal/cadence"
)

// Comm is what the check needs of the world communicator (*mpi.Comm).
type Comm interface {
	Rank() int
	Size() int
	Host() string
	BcastBlob(data []byte, root int) ([]byte, error)
	AllGather(data []byte) ([][]byte, error)
}

// ProbePrefix starts the name of the file rank 0 writes and removes again.
const ProbePrefix = ".rsag-shared-"

// Settle is how long a rank that does not see the probe keeps looking: a
// shared file system may show another node's new file late (attribute
// caches). Only a failing check waits for it.
var Settle = cadence.SharedSettle

// probe is what rank 0 broadcasts: the file it wrote and what is in it.
type probe struct {
	Dir   string `json:"dir"`   // rank 0's output dir, as given
	Name  string `json:"name"`  // the file's name in it
	Token string `json:"token"` // its content, fresh for every run
	Host  string `json:"host"`
	Err   string `json:"err,omitempty"` // rank 0 could not write it
}

// sight is what each rank reports back.
type sight struct {
	Host string `json:"host"`
	Dir  string `json:"dir"` // this rank's output dir, as given
	Seen bool   `json:"seen"`
}

// CheckShared has rank 0 write a file with a fresh token into dir and every
// rank look for it there. It returns nil when every rank sees it, and
// otherwise an error, the same on every rank, naming the ranks that do not
// and their hosts. It is collective: every rank must call it, before any
// other collective, with the directory it was given (which must exist).
func CheckShared(c Comm, dir string) error {
	var p probe
	if c.Rank() == 0 {
		p = writeProbe(dir, c.Host())
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if data, err = c.BcastBlob(data, 0); err != nil {
		return err
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("output dir check: rank 0's probe: %w", err)
	}
	if p.Err != "" {
		return fmt.Errorf("output dir %s: rank 0 (%s) cannot write a probe file in it: %s; choose another with -output-dir",
			p.Dir, p.Host, p.Err)
	}

	me := sight{Host: c.Host(), Dir: dir, Seen: sees(dir, p.Name, p.Token)}
	if data, err = json.Marshal(me); err != nil {
		return err
	}
	all, err := c.AllGather(data)
	// Every rank has looked once the gather is done.
	if c.Rank() == 0 {
		atomicfile.Remove(dir, p.Name)
	}
	if err != nil {
		return err
	}
	sights := make([]sight, len(all))
	for r, d := range all {
		if err := json.Unmarshal(d, &sights[r]); err != nil {
			return fmt.Errorf("output dir check: rank %d's report: %w", r, err)
		}
	}
	if len(sights) != c.Size() {
		return fmt.Errorf("output dir check: %d reports from %d ranks", len(sights), c.Size())
	}
	return verdict(p, sights)
}

// writeProbe writes the probe file into dir; a failure travels in Err.
func writeProbe(dir, host string) probe {
	p := probe{Dir: dir, Host: host}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		p.Err = err.Error()
		return p
	}
	p.Token = hex.EncodeToString(b[:])
	p.Name = ProbePrefix + p.Token
	// A fresh name, created exclusively and never through a link.
	f, err := atomicfile.OpenIn(dir, p.Name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		_, err = f.WriteString(p.Token)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		p.Err = err.Error()
	}
	return p
}

// sees looks for the probe until Settle has passed.
func sees(dir, name, token string) bool {
	deadline := time.Now().Add(Settle)
	for {
		if b, err := atomicfile.ReadIn(dir, name, int64(len(token))); err == nil && string(b) == token {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// verdict builds the error from what every rank saw; it depends on nothing
// but its arguments, so that every rank words it alike.
func verdict(p probe, sights []sight) error {
	var hosts []string // hosts with ranks that do not see it, in rank order
	missing := map[string][]string{}
	var other []string // ranks given another dir than rank 0
	for r, s := range sights {
		if s.Seen {
			continue
		}
		if _, ok := missing[s.Host]; !ok {
			hosts = append(hosts, s.Host)
		}
		missing[s.Host] = append(missing[s.Host], fmt.Sprint(r))
		if filepath.Clean(s.Dir) != filepath.Clean(p.Dir) {
			other = append(other, fmt.Sprintf("rank %d (%s) was given %q", r, s.Host, s.Dir))
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	var where []string
	for _, h := range hosts {
		where = append(where, fmt.Sprintf("%s %s on %s", plural("rank", len(missing[h])), strings.Join(missing[h], ", "), h))
	}
	msg := fmt.Sprintf("output dir %s is not shared by every rank: the file rank 0 (%s) wrote there is not visible to %s; "+
		"the output directory must be on a file system all nodes share (e.g. NFS or Lustre), the same path on every rank: "+
		"choose one with -output-dir", p.Dir, p.Host, strings.Join(where, "; "))
	if len(other) > 0 {
		msg += fmt.Sprintf(" (every rank must be given the same -output-dir: rank 0 was given %q, %s)", p.Dir, strings.Join(other, ", "))
	}
	return errors.New(msg)
}

func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

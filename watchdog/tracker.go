package watchdog

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StallEnv makes one rank stall, to prove the watchdog: the value is
// "rank=1,phase=timing,size=65536,seconds=600" (size and op=all-reduce
// narrow it; without them the first step of the phase stalls). The rank
// sleeps once, on the main goroutine, at the first matching step. Debug
// only: nothing else reads it.
const StallEnv = "RSAG_DEBUG_STALL"

// Stall is a parsed RSAG_DEBUG_STALL.
type Stall struct {
	rank    int
	phase   string
	op      string // "" is any
	bytes   int64  // -1 is any
	seconds int
	done    bool
}

// StallSteps is what a stall may name: the phases and the steps that are
// armed in them, so that a value that could never match is refused.
type StallSteps struct {
	World  int
	Phases []string
	Ops    []string
}

// maxStallSeconds bounds a debug stall: a day is more than any timeout_s.
const maxStallSeconds = 86400

// ParseStall reads RSAG_DEBUG_STALL's value; nil when it is empty. A value
// that names an unknown phase or op, a rank outside the world or an absurd
// length could never do what was meant and is refused.
func ParseStall(v string, steps StallSteps) (*Stall, error) {
	if v == "" {
		return nil, nil
	}
	s := &Stall{rank: -1, bytes: -1, seconds: -1}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s=%q: %s (e.g. %s=\"rank=1,phase=timing,size=65536,seconds=600\")",
			StallEnv, v, fmt.Sprintf(format, args...), StallEnv)
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, bad("%q is not key=value", kv)
		}
		if seen[k] {
			return nil, bad("%s is given twice: give it once", k)
		}
		seen[k] = true
		var err error
		switch k {
		case "rank":
			s.rank, err = strconv.Atoi(val)
		case "phase":
			s.phase = val
		case "op":
			s.op = val
		case "size":
			s.bytes, err = strconv.ParseInt(val, 10, 64)
		case "seconds":
			s.seconds, err = strconv.Atoi(val)
		default:
			return nil, bad("unknown key %q: use rank, phase, op, size, seconds", k)
		}
		if err != nil {
			return nil, bad("%s: %q is not a whole number", k, val)
		}
	}
	switch {
	case !seen["rank"]:
		return nil, bad("rank is missing")
	case s.rank < 0 || s.rank >= steps.World:
		return nil, bad("rank %d is not a rank of this job of %d (0 to %d)", s.rank, steps.World, steps.World-1)
	case s.phase == "":
		return nil, bad("phase is missing (%s)", strings.Join(steps.Phases, ", "))
	case !slices.Contains(steps.Phases, s.phase):
		return nil, bad("phase %q is unknown: use %s", s.phase, strings.Join(steps.Phases, ", "))
	case seen["op"] && !slices.Contains(steps.Ops, s.op):
		return nil, bad("op %q is never waited for: use %s", s.op, strings.Join(steps.Ops, ", "))
	case seen["size"] && s.bytes < 0:
		return nil, bad("size %d is negative", s.bytes)
	case !seen["seconds"]:
		return nil, bad("seconds is missing")
	case s.seconds < 0 || s.seconds > maxStallSeconds:
		return nil, bad("seconds %d: give 0 to %d", s.seconds, maxStallSeconds)
	}
	return s, nil
}

// Tracker is what the phases arm (phases.Tracker): the watchdog, and the
// debug stall.
type Tracker struct {
	wd     *Watchdog
	stall  *Stall
	rank   int
	host   string
	phase  string
	stderr io.Writer
}

// NewTracker arms wd for this rank; stderr gets the stall's notice.
func NewTracker(wd *Watchdog, rank int, host string, stderr io.Writer) *Tracker {
	return &Tracker{wd: wd, rank: rank, host: host, stderr: stderr}
}

// SetStall makes the tracker stall at the step s names (nil: never).
func (t *Tracker) SetStall(s *Stall) { t.stall = s }

// SetPhase names the phase the next steps belong to.
func (t *Tracker) SetPhase(name string) {
	t.phase = name
	t.wd.Phase(name)
}

// Arm starts the deadline of a step, and stalls there when asked to.
func (t *Tracker) Arm(op string, bytes int64) {
	t.wd.Arm(op, bytes)
	if s := t.stall; s != nil && !s.done && s.rank == t.rank && s.phase == t.phase &&
		(s.op == "" || s.op == op) && (s.bytes < 0 || s.bytes == bytes) {
		s.done = true
		fmt.Fprintf(t.stderr, "rsag: rank %d (%s): debug: %s: stalling before %s %s at %d bytes for %ds\n",
			t.rank, t.host, StallEnv, t.phase, op, bytes, s.seconds)
		time.Sleep(time.Duration(s.seconds) * time.Second)
	}
}

// Kick restarts the current step's deadline.
func (t *Tracker) Kick() { t.wd.Kick() }

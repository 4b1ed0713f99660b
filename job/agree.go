package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"rsag/internal/rankset"
	"rsag/phase"
)

// sharedError is an error every rank reached together, with the same
// message, so every rank can exit cleanly with the same code instead of
// aborting the job.
type sharedError struct {
	err  error
	code int
}

func (e *sharedError) Error() string { return e.err.Error() }
func (e *sharedError) Unwrap() error { return e.err }

func shared(code int, err error) error {
	if err == nil {
		return nil
	}
	return &sharedError{err: err, code: code}
}

// agree tells every rank whether err is nil on all of them, so that a
// problem one rank sees ends every rank alike instead of leaving the others
// in the next collective. When some rank failed, every rank returns the
// same shared error: "<what> on rank(s) [..] (hosts): <their message>",
// one clause per distinct message.
func (s *session) agree(err error, code int, what string) error {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	said, err := s.gatherSaid(msg)
	if err != nil {
		return err
	}
	// Gathered at the first agreement whatever it finds, so that every
	// later use has them: a signal's reason names ranks by host.
	hosts, err := s.hosts()
	if err != nil || len(said.order) == 0 {
		return err
	}
	var parts []string
	for _, m := range said.order {
		var on []string
		for _, r := range said.ranks[m] {
			on = append(on, hosts[r])
		}
		parts = append(parts, fmt.Sprintf("%s on %s (%s): %s", what, rankList(said.ranks[m], said.world), rankset.Names(dedupe(on)), m))
	}
	return shared(code, errors.New(strings.Join(parts, "; ")))
}

// messages are what the ranks said: each distinct non-empty message in
// the order of the first rank that said it, and the ranks that said it.
type messages struct {
	order []string
	ranks map[string][]int
	world int
}

// gatherSaid gathers msg from every rank ("" for nothing to say).
func (s *session) gatherSaid(msg string) (messages, error) {
	op := "agreement between ranks"
	if !s.agreed {
		// The first collective after MPI's start-up: a rank that joined
		// MPI_Init but never gets here (another program in an MPMD line,
		// a stopped process) is waited for in this one.
		op = "first agreement between ranks after MPI start-up (every rank of the job must reach it)"
		s.agreed = true
	}
	s.tr.Arm(op, -1)
	defer s.tr.Leave()
	all, err := s.comm.AllGather([]byte(msg))
	if err != nil {
		return messages{}, err
	}
	out := messages{ranks: map[string][]int{}, world: len(all)}
	for r, m := range all {
		if len(m) == 0 {
			continue
		}
		if _, seen := out.ranks[string(m)]; !seen {
			out.order = append(out.order, string(m))
		}
		out.ranks[string(m)] = append(out.ranks[string(m)], r)
	}
	return out, nil
}

// hosts is every rank's host, gathered once.
func (s *session) hosts() ([]string, error) {
	if s.hostsOf != nil {
		return s.hostsOf, nil
	}
	s.tr.Arm("agreement between ranks", -1)
	defer s.tr.Leave()
	all, err := s.comm.AllGather([]byte(s.comm.Host()))
	if err != nil {
		return nil, err
	}
	s.hostsOf = make([]string, len(all))
	for r, h := range all {
		s.hostsOf[r] = string(h)
	}
	return s.hostsOf, nil
}

// myCPUs are the processors this process may run on (its affinity mask);
// none when the kernel will not say.
func myCPUs() phase.CPUMask {
	var set unix.CPUSet
	var mine phase.CPUMask
	if unix.SchedGetaffinity(0, &set) == nil {
		for i := range len(set) * 64 {
			if set.IsSet(i) {
				mine = mine.With(i)
			}
		}
	}
	return mine
}

// cpus is, by rank, the processors each rank may run on (its affinity
// mask, as the launcher bound it: bit i for processor i), gathered once: a
// node whose ranks outnumber the processors they share cannot tell a slow
// rank from the scheduler's turn-taking.
func (s *session) cpus() ([]phase.CPUMask, error) {
	if s.cpusOf != nil {
		return s.cpusOf, nil
	}
	s.tr.Arm("agreement between ranks", -1)
	defer s.tr.Leave()
	all, err := s.comm.AllGather(myCPUs().Bytes())
	if err != nil {
		return nil, err
	}
	s.cpusOf = make([]phase.CPUMask, len(all))
	for r, b := range all {
		s.cpusOf[r] = phase.MaskOf(b)
	}
	return s.cpusOf, nil
}

// rankList says which ranks: "every rank", "rank 2" or "ranks 1-7,10"
// (rankset: bounded for any world).
func rankList(ranks []int, world int) string {
	if len(ranks) == world {
		return "every rank"
	}
	return rankset.Ranks(ranks)
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// gatherJSON gathers every rank's v to rank 0, which gets them in rank
// order; the other ranks get nil.
func gatherJSON[T any](s *session, what string, v T) ([]T, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	s.tr.Arm("gather of "+what, -1)
	defer s.tr.Leave()
	all, err := s.comm.Gather(data, 0)
	if err != nil || s.comm.Rank() != 0 {
		return nil, err
	}
	out := make([]T, len(all))
	for r, d := range all {
		if err := json.Unmarshal(d, &out[r]); err != nil {
			return nil, fmt.Errorf("rank %d's %s: %w", r, what, err)
		}
	}
	return out, nil
}

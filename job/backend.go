package job

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"rsag/coll"
	"rsag/mpi"
	"rsag/mpibackend"
	"rsag/ncclx"
)

// backends are the backends rsag can open, by the config's name, over
// MPI's world. (A world that brings its own, BackendWorld, opens that.)
var backends = map[string]func(s *session, c *mpi.Comm) (coll.Backend, error){
	"nccl": func(s *session, c *mpi.Comm) (coll.Backend, error) { return ncclx.New(c, s.ncclOptions) },
	"mpi":  func(s *session, c *mpi.Comm) (coll.Backend, error) { return mpibackend.New(c) },
}

// chooseBackend resolves the config's backend. "auto" takes NCCL when
// every rank's node has the libraries and a GPU for each local rank, and
// MPI otherwise; the ranks decide together so that all use the same one.
// It runs before the output dir is touched: a backend that cannot run here
// is a bad input.
func (s *session) chooseBackend(name string) (string, error) {
	if name != "auto" && name != "nccl" {
		return name, nil
	}
	reasons, err := s.probeNCCL()
	if err != nil {
		return "", err
	}
	switch {
	case len(reasons) == 0:
		return "nccl", nil
	case name == "nccl":
		return "", shared(ExitBadArgs, fmt.Errorf("backend nccl cannot run here: %s; fix that, or use -backend mpi", strings.Join(reasons, "; ")))
	}
	s.printf("backend auto: using mpi, since %s\n", reasons[0])
	return "mpi", nil
}

// probeNCCL asks every rank whether NCCL can run there and returns the
// distinct reasons why not, each naming its ranks; none means it can.
// Ranks that would find the same ask once, through the lowest of them:
// the ranks of one host with the same environment for the CUDA driver,
// NCCL and their loader (probeKey). Every rank loading and starting the
// CUDA driver queued behind the others on one node, about 16 ms a rank:
// 255 ms of a 16-rank start-up on one host (docs/performance-log.md).
func (s *session) probeNCCL() ([]string, error) {
	cwd, _ := os.Getwd()
	key := probeKey(s.comm.Host(), cwd, os.Environ())
	alike, err := s.gatherSaid(key)
	if err != nil {
		return nil, err
	}
	why := ""
	if alike.ranks[key][0] == s.comm.Rank() {
		if err := ncclx.Probe(s.comm.LocalSize(), s.ncclOptions); err != nil {
			why = err.Error()
		}
	}
	said, err := s.gatherSaid(why)
	if err != nil {
		return nil, err
	}
	return probeReasons(alike, said), nil
}

// probeKey is what decides a probe's answer on this rank: its host, its
// working directory (a relative RSAG_NCCL_LIBRARY) and the variables the
// CUDA driver, NCCL and the dynamic loader read, which a launcher may set
// per rank (CUDA_VISIBLE_DEVICES above all).
func probeKey(host, cwd string, environ []string) string {
	var vars []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range []string{"CUDA_", "NCCL_", "NVIDIA_", "RSAG_", "LD_"} {
			if strings.HasPrefix(name, p) {
				vars = append(vars, kv)
				break
			}
		}
	}
	slices.Sort(vars)
	return strings.Join(append([]string{host, cwd}, vars...), "\x00")
}

// probeReasons gives each reason a probing rank said (in said) to every
// rank that probes alike with it (in alike: each key's ranks, the first
// its prober), in the order of the first rank that said it.
func probeReasons(alike, said messages) []string {
	var reasons []string
	for _, why := range said.order {
		var ranks []int
		for _, key := range alike.order {
			if group := alike.ranks[key]; slices.Contains(said.ranks[why], group[0]) {
				ranks = append(ranks, group...)
			}
		}
		slices.Sort(ranks)
		reasons = append(reasons, fmt.Sprintf("%s (rank(s) %v)", why, ranks))
	}
	return reasons
}

// openBackend starts the backend chooseBackend chose.
func (s *session) openBackend(name string) (coll.Backend, error) {
	open, ok := backends[name]
	if !ok {
		return nil, shared(ExitBadArgs, fmt.Errorf("backend %q is unknown: use auto, nccl or mpi", name))
	}
	s.tr.Arm("start of the "+name+" backend", -1)
	defer s.tr.Leave()
	var be coll.Backend
	var err error
	switch w := s.comm.(type) {
	case BackendWorld:
		be, err = w.OpenBackend(name)
	case *mpi.Comm:
		be, err = open(s, w)
	default:
		err = fmt.Errorf("a world of %T brings no backend", s.comm)
	}
	var dup *ncclx.DuplicateGPUError
	if errors.As(err, &dup) {
		// Every rank found it, from the same exchange: a bad input.
		return nil, shared(ExitBadArgs, fmt.Errorf("backend nccl cannot run here: %w", err))
	}
	if err != nil {
		return nil, fmt.Errorf("starting the %s backend: %w", name, err)
	}
	return be, nil
}

// requestAbort returns the function with which the watchdog or a signal
// asks the backend to abort its communicator (NCCL), and whose channel is
// closed once it has; nil when there is nothing to abort.
func requestAbort(be coll.Backend) func() <-chan struct{} {
	if a, ok := be.(coll.AbortRequester); ok {
		return a.RequestAbort
	}
	return nil
}

package job

import (
	"fmt"
	"strings"

	"rsag/coll"
	"rsag/mpibackend"
	"rsag/ncclx"
)

// backends are the backends rsag can open, by the config's name.
var backends = map[string]func(s *session) (coll.Backend, error){
	"nccl": func(s *session) (coll.Backend, error) { return ncclx.New(s.comm) },
	"mpi":  func(s *session) (coll.Backend, error) { return mpibackend.New(s.comm) },
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
func (s *session) probeNCCL() ([]string, error) {
	why := ""
	if err := ncclx.Probe(s.comm.LocalSize()); err != nil {
		why = err.Error()
	}
	said, err := s.gatherSaid(why)
	if err != nil {
		return nil, err
	}
	var reasons []string
	for _, w := range said.order {
		reasons = append(reasons, fmt.Sprintf("%s (rank(s) %v)", w, said.ranks[w]))
	}
	return reasons, nil
}

// openBackend starts the backend chooseBackend chose.
func (s *session) openBackend(name string) (coll.Backend, error) {
	open, ok := backends[name]
	if !ok {
		return nil, shared(ExitBadArgs, fmt.Errorf("backend %q is unknown: use auto, nccl or mpi", name))
	}
	s.tr.Arm("start of the "+name+" backend", -1)
	defer s.tr.Leave()
	be, err := open(s)
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

package main

import (
	"fmt"
	"strings"

	"rsag/mpibackend"
	"rsag/ncclx"
)

// chooseBackend resolves the config's backend. "auto" takes NCCL when
// every rank's node has the libraries and a GPU for each local rank, and
// MPI otherwise; the ranks decide together so that all use the same one.
// It runs before the output dir is touched: a backend that cannot run here
// is a bad input.
func (j *job) chooseBackend(name string) (string, error) {
	if name == "auto" || name == "nccl" {
		reasons, err := j.probeNCCL()
		if err != nil {
			return "", err
		}
		switch {
		case len(reasons) == 0:
			name = "nccl"
		case name == "nccl":
			return "", shared(exitBadArgs, fmt.Errorf("backend nccl cannot run here: %s; fix that, or use -backend mpi", strings.Join(reasons, "; ")))
		default:
			j.printf("backend auto: using mpi, since %s\n", reasons[0])
			name = "mpi"
		}
	}
	return name, nil
}

// openBackend starts the backend chooseBackend chose.
func (j *job) openBackend(name string) error {
	var err error
	j.tr.Arm("start of the "+name+" backend", -1)
	switch name {
	case "nccl":
		j.backend, err = ncclx.New(j.comm)
	case "mpi":
		j.backend, err = mpibackend.New(j.comm)
	default:
		return shared(exitBadArgs, fmt.Errorf("backend %q is unknown: use auto, nccl or mpi", name))
	}
	if err != nil {
		return fmt.Errorf("starting the %s backend: %w", name, err)
	}
	return nil
}

// probeNCCL asks every rank whether NCCL can run there and returns the
// distinct reasons why not, each naming its ranks; none means it can.
func (j *job) probeNCCL() ([]string, error) {
	why := ""
	if err := ncclx.Probe(j.comm.LocalSize()); err != nil {
		why = err.Error()
	}
	j.tr.Arm("agreement between ranks", -1)
	all, err := j.comm.AllGather([]byte(why))
	if err != nil {
		return nil, err
	}
	var reasons []string
	ranksOf := map[string][]int{}
	for r, w := range all {
		if len(w) == 0 {
			continue
		}
		if _, seen := ranksOf[string(w)]; !seen {
			reasons = append(reasons, string(w))
		}
		ranksOf[string(w)] = append(ranksOf[string(w)], r)
	}
	for i, w := range reasons {
		reasons[i] = fmt.Sprintf("%s (rank(s) %v)", w, ranksOf[w])
	}
	return reasons, nil
}

// abortBackend tears down the NCCL communicator so that ranks blocked in a
// collective return, before the job is aborted through MPI.
func (j *job) abortBackend() {
	if nb, ok := j.backend.(*ncclx.Backend); ok {
		nb.Abort()
	}
}

package job

import (
	"os"

	"rsag/coll"
	"rsag/mpi"
)

// World is the job's ranks as this rank sees them: the 11 calls a run
// makes of them, besides its backend's. In the binary it is MPI's world
// (*mpi.Comm, which Main starts); in a test it may be goroutine ranks of
// one process (Options.World), so that a run's logic is proved without a
// launch, and mpirun proves only what a process boundary shows (STYLE.md,
// rule 20).
type World interface {
	coll.Comm // Rank, Size, Barrier, AllTrue, MaxFloat64s: what the phases use (phases.WatchComm)
	Host() string
	LocalRank() int // rank among the ranks on this node
	LocalSize() int // ranks on this node
	AllGather(data []byte) ([][]byte, error)
	Gather(data []byte, root int) ([][]byte, error)
	BcastBlob(data []byte, root int) ([]byte, error)
	// Abort ends every rank of the job with code; it returns only when it
	// could not.
	Abort(code int) error
	Finalize() error
}

var _ World = (*mpi.Comm)(nil)

// BackendWorld is a World that brings its own backend, whatever the
// config names: goroutine ranks bring the in-memory one, since MPI's and
// NCCL's need MPI's world. The name is the one chooseBackend settled on,
// and what run.json and the header say the run asked for.
type BackendWorld interface {
	World
	OpenBackend(name string) (coll.Backend, error)
}

// EnvWorld is a World whose ranks each have an environment of their own,
// apart from their process's: goroutine ranks of one process, which a test
// gives what mpirun's -x gives one rank of an MPMD line. A rank of MPI's
// world is its process, and reads the process's environment.
type EnvWorld interface {
	World
	Getenv(key string) string
}

// getenv is the variable key of this rank's environment (EnvWorld).
func (s *session) getenv(key string) string {
	if w, ok := s.comm.(EnvWorld); ok {
		return w.Getenv(key)
	}
	return os.Getenv(key)
}

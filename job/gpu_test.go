package job

import (
	"errors"
	"strings"
	"testing"
	"time"

	"rsag/coll"
	"rsag/mpi"
	"rsag/ncclx"
	"rsag/watchdog"
)

// Ranks that would share a GPU unasked are a bad input, as every rank
// finds them from one exchange: the job's shared error, exit 2, naming the
// backend; any other failure to start stays the rank's own.
func TestDuplicateGPUIsABadInput(t *testing.T) {
	old := backends["nccl"]
	t.Cleanup(func() { backends["nccl"] = old })
	s := &session{comm: &mpi.Comm{}, tr: watchdog.NewSteps(watchdog.NewTracker(watchdog.New(time.Minute, func(string) {})))}

	backends["nccl"] = func(*session, *mpi.Comm) (coll.Backend, error) { return nil, &ncclx.DuplicateGPUError{} }
	_, err := s.openBackend("nccl")
	var sh *sharedError
	if !errors.As(err, &sh) || sh.code != ExitBadArgs || !strings.HasPrefix(err.Error(), "backend nccl cannot run here: NCCL backend") {
		t.Errorf("got %v, want a shared error with exit %d", err, ExitBadArgs)
	}

	backends["nccl"] = func(*session, *mpi.Comm) (coll.Backend, error) { return nil, errors.New("cuInit failed") }
	if _, err := s.openBackend("nccl"); errors.As(err, &sh) || err == nil || !strings.Contains(err.Error(), "starting the nccl backend: cuInit failed") {
		t.Errorf("got %v, want the rank's own error", err)
	}
}

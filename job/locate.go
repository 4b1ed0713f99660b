package job

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"rsag/coll"
	"rsag/config"
	"rsag/phases"
	"rsag/report"
)

// ExitSuspects is the exit status of a run that found suspects with
// locate.fail_on_suspect = true: every file written, run.json complete and
// listing them, so that a health check can gate on the status alone.
const ExitSuspects = 4

// planLocate forms the locate phase's rounds from every rank's host, the
// same on every rank, so that sizes too small for the largest
// sub-communicator are refused alike everywhere before any collective.
func (s *session) planLocate(cfg config.Config, w *work) error {
	hosts, err := s.hosts()
	if err != nil {
		return err
	}
	plan, err := phases.PlanLocate(hosts, cfg.Locate.Spec())
	if err != nil {
		return shared(ExitBadArgs, fmt.Errorf("config: %w", err))
	}
	w.locate = &plan
	return nil
}

// checkLocate refuses, before any collective, a backend without
// sub-communicators and buffers that do not fit: two of the largest size.
func checkLocate(be coll.Backend, plan *phases.LocatePlan) error {
	if _, ok := coll.Find[coll.Splitter](be); !ok {
		return fmt.Errorf("the locate phase runs pairs on sub-communicators, which the %s backend has not: set locate.enabled = false", be.Info().Backend)
	}
	var largest int64
	for _, size := range plan.Spec.SizesBytes {
		largest = max(largest, size)
	}
	return phases.CheckFits(be, 2*largest, "the locate phase at its largest size")
}

// runLocate runs the phase and says on rank 0 what it ran and how long.
func (s *session) runLocate(be coll.Backend, comm coll.Comm, plan *phases.LocatePlan, progress func(string)) (phases.LocateResult, error) {
	s.phase("locate")
	for _, line := range plan.Described() {
		progress("locate: " + line)
	}
	t0 := time.Now()
	res, err := phases.RunLocate(be, comm, *plan)
	if err != nil {
		return res, err
	}
	progress(fmt.Sprintf("locate: %d measurements on rank 0 in %.1f s", len(res.Samples), time.Since(t0).Seconds()))
	return res, nil
}

// locateInput is the summary's, when the phase ran.
func locateInput(cfg config.Config, w work) *report.LocateInput {
	if w.locate == nil {
		return nil
	}
	return &report.LocateInput{Plan: *w.locate, Threshold: cfg.Locate.Threshold}
}

// locateLine is rank 0's closing line of the phase: the suspects, and
// under Slurm the sbatch option that leaves them out.
func locateLine(sum *report.Summary) string {
	if sum == nil || sum.Locate == nil {
		return ""
	}
	return report.LocateLine(*sum.Locate, os.Getenv("SLURM_JOB_ID") != "") + "\n"
}

// suspectGate fails the run, on every rank alike, when the locate phase
// named suspects and locate.fail_on_suspect is true (run.json lists the
// suspects whenever there are any: execute).
func (s *session) suspectGate(cfg config.Config, sum *report.Summary) error {
	var err error
	if sum != nil {
		suspects := report.SuspectTexts(sum.Locate)
		if cfg.Locate.FailOnSuspect && len(suspects) > 0 {
			err = errors.New(strings.Join(suspects, ", ") + " (locate.fail_on_suspect = true)")
		}
	}
	return s.agree(err, ExitSuspects, "the locate phase found suspects")
}

package job

import (
	"errors"
	"os"
	"strings"

	"rsag/config"
	"rsag/report"
)

// ExitSuspects is the exit status of a run that found suspects with
// locate.fail_on_suspect = true: every file written, run.json complete and
// listing them, so that a health check can gate on the status alone.
const ExitSuspects = 4

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

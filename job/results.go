package job

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"rsag/coll"
	"rsag/config"
	"rsag/mpi"
	"rsag/outdir"
	"rsag/report"
	_ "rsag/report/plot" // the figures are outputs: they register themselves
)

// writeResults writes this rank's files and gathers every rank's rows to
// rank 0, which builds the summary once, writes the combined files and
// prints the tables from it. It returns the summary on rank 0, nil
// elsewhere.
func (s *session) writeResults(cfg config.Config, w work, rows report.Rows, ran report.Phases, infos []coll.Info) (*report.Summary, error) {
	dir := s.opts.OutputDir
	werr := report.Write(report.EachRank, dir, report.Input{Rank: s.comm.Rank(), World: s.comm.Size(), Ran: ran, Rows: rows})
	if err := s.agree(werr, ExitFailed, "writing results in "+dir+" failed"); err != nil {
		return nil, err
	}
	all, err := gatherJSON(s, "result rows", rows)
	if err != nil || s.comm.Rank() != 0 {
		return nil, err
	}
	merged := report.Merge(all)
	if err := report.Write(report.Combined, dir, report.Input{World: s.comm.Size(), Ran: ran, Rows: merged}); err != nil {
		return nil, err
	}
	obj, err := report.ConfigObject(cfg)
	if err != nil {
		return nil, err
	}
	discard := map[string]int{}
	for _, r := range cfg.Runs {
		discard[r.Name] = r.Discard
	}
	sum := report.NewSummary(report.SummaryInput{Version: s.opts.Version, Commit: s.opts.Commit,
		Status: outdir.StatusRunning, Started: s.opts.Started, Ended: time.Now(), Config: obj,
		MPILibrary: mpi.LibraryVersion(), Infos: infos, Environ: os.Environ(), Rows: merged,
		World: s.comm.Size(), GroupSize: w.groupSize(), Groups: w.groups, Discard: discard, Locate: locateInput(cfg, w)})
	if err := report.WriteTables(s.out, sum, ran); err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(dir)
	s.printf("results in %s (%.1f s since rank 0 started)\n%s\n", abs, time.Since(s.opts.Started).Seconds(), report.ClosingLine(all[0]))
	s.printf("%s", locateLine(&sum))
	return &sum, nil
}

// gate fails the run, on every rank alike, when a run's largest size fell
// below its min_busbw_gbps (rank 0 holds the statistics and decides).
func (s *session) gate(cfg config.Config, sum *report.Summary) error {
	var err error
	if sum != nil {
		thresholds := map[string]float64{}
		for _, r := range cfg.Runs {
			thresholds[r.Name] = r.MinBusBWGBps
		}
		if failures := report.BusBWGate(sum.Timing, thresholds); len(failures) > 0 {
			err = errors.New(strings.Join(failures, "; "))
		}
	}
	return s.agree(err, ExitFailed, "bus bandwidth below the gate")
}

// writeReport writes, on rank 0, the final outputs (summary.json, the
// figures) from the summary, each listed in run.json before it is written;
// it does nothing on the other ranks.
func (s *session) writeReport(sum *report.Summary, ran report.Phases, status, reason string, log *runLog) error {
	if sum == nil {
		return nil
	}
	final := *sum
	final.Status, final.Reason, final.Ended = status, reason, time.Now().UTC().Format(time.RFC3339)
	files, write := report.Plan(report.Final, report.Input{World: s.comm.Size(), Ran: ran, Summary: &final})
	if err := log.plan(files...); err != nil {
		return fmt.Errorf("writing %s: %w", outdir.RunFile, err)
	}
	return write(s.opts.OutputDir)
}

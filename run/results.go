package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"rsag/config"
	"rsag/mpi"
	"rsag/phases"
	"rsag/report"
	"rsag/report/page"
	"rsag/report/plot"
)

// writeResults writes this rank's files and gathers every rank's rows to
// rank 0, which builds the summary once, writes the combined files and
// prints the tables from it. It returns the summary on rank 0, nil
// elsewhere.
func (s *session) writeResults(cfg config.Config, w work, rows report.Rows, ran report.Phases, infos []phases.Info) (*report.Summary, error) {
	dir := s.opts.OutputDir
	werr := report.WriteRankFiles(dir, s.comm.Rank(), rows, ran)
	if err := s.agree(werr, ExitFailed, "writing results in "+dir+" failed"); err != nil {
		return nil, err
	}
	all, err := gatherJSON(s, "result rows", rows)
	if err != nil || s.comm.Rank() != 0 {
		return nil, err
	}
	merged := report.Merge(all)
	if err := report.WriteCombined(dir, merged, ran); err != nil {
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
		Status: report.StatusRunning, Started: s.opts.Started, Ended: time.Now(), Config: obj,
		MPILibrary: mpi.LibraryVersion(), Infos: infos, Environ: os.Environ(), Command: os.Args, Rows: merged,
		World: s.comm.Size(), GroupSize: w.groupSize(), Groups: w.groups, Discard: discard})
	if err := report.WriteTables(s.out, sum, ran); err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(dir)
	s.printf("results in %s (%.1f s since rank 0 started)\n%s\n", abs, time.Since(s.opts.Started).Seconds(), report.ClosingLine(all[0]))
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

// writeReport writes, on rank 0, summary.json, the figures (PNG and SVG)
// and report.html from the summary, each listed in run.json before it is
// written; it does nothing on the other ranks.
func (s *session) writeReport(sum *report.Summary, status, reason string, log *runLog) error {
	if sum == nil {
		return nil
	}
	dir := s.opts.OutputDir
	final := *sum
	final.Status, final.Reason, final.Ended = status, reason, time.Now().UTC().Format(time.RFC3339)
	figs := plot.FiguresOf(final)
	if err := log.plan(append(figs.Names(), page.File)...); err != nil {
		return fmt.Errorf("writing %s: %w", report.RunFile, err)
	}
	if _, err := figs.Write(dir); err != nil {
		return err
	}
	if err := page.WriteFile(filepath.Join(dir, page.File), final); err != nil {
		return err
	}
	if err := report.WriteSummary(dir, final); err != nil {
		return fmt.Errorf("writing %s: %w", report.SummaryFile, err)
	}
	return nil
}

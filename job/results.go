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
	_ "rsag/report/page" // report.html is an output: it registers itself
	_ "rsag/report/plot" // the figures are outputs: they register themselves
)

// writeResults writes this rank's files and gathers every rank's rows to
// rank 0, which builds the summary once, writes the combined files and
// prints the tables from it. It returns the summary on rank 0, nil
// elsewhere.
func (s *session) writeResults(cfg config.Config, w work, rows report.Rows, ran report.Phases, infos []coll.Info) (*report.Summary, error) {
	dir := s.opts.OutputDir
	werr := report.Write(report.EachRank, dir, report.Input{Rank: s.comm.Rank(), World: s.comm.Size(), Ran: ran, Rows: rows})
	if err := s.agreeOnWriting(werr); err != nil {
		return nil, err
	}
	packed, err := gatherJSON(s, "result rows", report.Pack(rows))
	if err != nil {
		return nil, err
	}
	var sum *report.Summary
	if s.comm.Rank() == 0 {
		var merged report.Rows
		if merged, err = report.MergePacked(packed); err == nil {
			sum, err = s.combine(cfg, w, merged, ran, infos)
		}
	}
	if err := s.agreeOnWriting(err); err != nil {
		return nil, err
	}
	return sum, nil
}

// agreeOnWriting has every rank learn whether each could write its part
// of the output dir, and end alike when one could not. Rank 0 writes the
// combined files and the report alone: left to its MPI_Abort, the others
// would by then be in MPI_Finalize, where Open MPI was seen in CI to keep
// the job alive for over a minute.
func (s *session) agreeOnWriting(err error) error {
	return s.agree(err, ExitFailed, "writing results in "+s.opts.OutputDir+" failed")
}

// combine writes, on rank 0, the combined files of every rank's rows
// (merged), builds the summary and prints the tables from it.
func (s *session) combine(cfg config.Config, w work, merged report.Rows, ran report.Phases, infos []coll.Info) (*report.Summary, error) {
	dir := s.opts.OutputDir
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
		MPILibrary: mpi.LibraryVersion(), Infos: infos, Environ: os.Environ(), Command: os.Args, Rows: merged,
		World: s.comm.Size(), GroupSize: w.groupSize(), Groups: w.groups.Of(), Discard: discard, Phases: s.phaseSeconds})
	w.summarize(merged, &sum)
	if err := report.WriteTables(s.out, sum, ran); err != nil {
		return nil, err
	}
	return &sum, nil
}

// printEnd prints, on rank 0, how the run ended, once run.json says so:
// where its results are and the seed's closing line (rows: rank 0's),
// with the time it took; or, for a run that failed once it had started
// writing, that its results are not complete, and why.
func (s *session) printEnd(rows report.Rows, sum *report.Summary, failure error, log *runLog) {
	if s.comm.Rank() != 0 {
		return
	}
	abs, _ := filepath.Abs(s.opts.OutputDir)
	took := time.Since(s.opts.Started).Seconds()
	if failure == nil {
		s.printf("results in %s (%.1f s since rank 0 started)\n%s\n%s", abs, took, report.ClosingLine(rows), locateLine(sum))
		return
	}
	said := log.status()
	if said == "" || said == outdir.StatusComplete {
		return // nothing was written, or all of it (suspects found): the error says it all
	}
	s.printf("results in %s are not complete (%.1f s since rank 0 started; its %s says %s): %v\n", abs, took, outdir.RunFile, said, failure)
}

// gate fails the run, on every rank alike, when a run's largest size fell
// below its min_busbw_gbps (rank 0 holds the statistics and decides).
func (s *session) gate(cfg config.Config, sum *report.Summary) error {
	var err error
	if sum != nil {
		if failures := report.BusBWGate(sum.Timing, gateThresholds(cfg)); len(failures) > 0 {
			err = errors.New(strings.Join(failures, "; "))
		}
	}
	if err := s.agree(err, ExitFailed, "bus bandwidth below the gate"); err != nil {
		return err
	}
	return s.checksGate(sum)
}

// gateThresholds are the runs' min_busbw_gbps and its statistic, by run.
func gateThresholds(cfg config.Config) map[string]report.Gate {
	gates := map[string]report.Gate{}
	for _, r := range cfg.Runs {
		gates[r.Name] = report.Gate{MinGBps: r.MinBusBWGBps, Statistic: r.MinBusBWStatistic}
	}
	return gates
}

// checkMetricsDir refuses, before any collective, a metrics_dir that rank
// 0 (which writes rsag.prom there at the end) cannot write into.
func (s *session) checkMetricsDir(cfg config.Config) error {
	var err error
	if s.comm.Rank() == 0 && cfg.MetricsDir != "" {
		if fi, serr := os.Stat(cfg.MetricsDir); serr != nil || !fi.IsDir() {
			err = fmt.Errorf("metrics_dir %s is not a directory on rank 0's host (%v): make it, or give node_exporter's --collector.textfile.directory", config.Clip(cfg.MetricsDir), serr)
		} else if werr := outdir.CheckWritable(cfg.MetricsDir); werr != nil {
			err = fmt.Errorf("metrics_dir: %w", werr)
		}
	}
	return s.agree(err, ExitBadArgs, "metrics_dir is not writable")
}

// writeReport writes, on rank 0, the final outputs (the figures), then
// the last (summary.json) from the summary, each listed in run.json before
// it is written, and ends run.json with status in the same step as the
// last (runLog.commit); it does nothing on the other ranks.
func (s *session) writeReport(cfg config.Config, sum *report.Summary, ran report.Phases, status, reason string, log *runLog) error {
	if sum == nil {
		return nil
	}
	final := *sum
	final.Status, final.Reason, final.Ended = status, reason, time.Now().UTC().Format(time.RFC3339)
	// The run's one list of verdicts, computed once with its final status:
	// every output and the verdict line read it.
	verdicts := report.VerdictsOf(final)
	final.Verdict, sum.Verdict = &verdicts, &verdicts
	in := report.Input{World: s.comm.Size(), Ran: ran, Summary: &final,
		Gates: report.Gates(final.Timing, gateThresholds(cfg)), MetricsDir: cfg.MetricsDir}
	files, write := report.Plan(report.Final, in)
	last, writeLast := report.Plan(report.Last, in)
	if err := log.plan(append(files, last...)...); err != nil {
		return fmt.Errorf("writing %s: %w", outdir.RunFile, err)
	}
	if err := write(s.opts.OutputDir); err != nil {
		return err
	}
	return log.commit(status, reason, final.Ended, last, writeLast)
}

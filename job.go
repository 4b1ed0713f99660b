package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"rsag/config"
	"rsag/mpi"
	"rsag/outdir"
	"rsag/phases"
	"rsag/report"
	"rsag/report/plot"
	"rsag/watchdog"
)

// job is one run of rsag on this rank.
type job struct {
	opts    options
	comm    *mpi.Comm
	out     io.Writer // rank 0's tables and progress
	stderr  io.Writer
	backend phases.Backend // the backend itself
	watched phases.Backend // the backend with every collective armed on the watchdog
	started time.Time

	wd  *watchdog.Watchdog
	tr  *tracker
	end *ender
	log *runLog // rank 0's run.json, once the output dir is ours

	infos   []phases.Info  // rank 0: every rank's backend description
	all     []report.Rows  // rank 0: every rank's rows, once gathered
	summary report.Summary // rank 0: the statistics over all, computed once
}

// runLog is rank 0's run.json. The main goroutine writes "running" and
// "complete"; the watchdog and signal goroutines may write "failed" at any
// moment, so writes are serialised and the first final status wins.
type runLog struct {
	mu    sync.Mutex
	dir   string
	rec   report.Run
	final bool
}

func (l *runLog) write(status, reason string, files []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final {
		return nil
	}
	l.rec.Status, l.rec.Reason = status, reason
	if status != report.StatusRunning {
		l.final = true
		l.rec.Ended = time.Now().UTC().Format(time.RFC3339)
		l.rec.Files = files
	}
	return report.WriteRun(l.dir, l.rec)
}

// fail marks the run failed, on rank 0, when it got as far as run.json.
func (j *job) fail(reason string) {
	if j.log != nil {
		if err := j.log.write(report.StatusFailed, reason, nil); err != nil {
			fmt.Fprintf(j.stderr, "rsag: rank 0 (%s): marking the run failed: %v\n", j.comm.Host(), err)
		}
	}
}

// phase names the phase the next blocking steps belong to.
func (j *job) phase(name string) { j.tr.setPhase(name) }

// sharedError is an error every rank reached together (a bad config, a check
// that failed somewhere and was agreed on), so every rank can exit cleanly
// with the same code instead of aborting the job.
type sharedError struct {
	err  error
	code int
}

func (e *sharedError) Error() string { return e.err.Error() }
func (e *sharedError) Unwrap() error { return e.err }

func shared(code int, err error) error {
	if err == nil {
		return nil
	}
	return &sharedError{err: err, code: code}
}

func (j *job) printf(format string, args ...any) {
	if j.comm.Rank() == 0 {
		fmt.Fprintf(j.out, format, args...)
	}
}

func (j *job) run() error {
	j.phase("startup")
	cfg, err := j.loadConfig()
	if err != nil {
		return shared(exitBadArgs, err)
	}
	j.wd.SetTimeout(time.Duration(cfg.TimeoutS) * time.Second)
	if err := j.loadStall(); err != nil {
		return shared(exitBadArgs, err)
	}
	backend, err := j.chooseBackend(cfg.Backend)
	if err != nil {
		return err
	}
	if err := j.checkOutputDir(); err != nil {
		return shared(exitBadArgs, err)
	}
	if err := j.openBackend(backend); err != nil {
		return err
	}
	defer j.backend.Close()
	j.watched = phases.Watch(j.backend, j.tr)
	j.end.setAbort(j.requestAbort)
	if err := j.printHeader(cfg); err != nil {
		return err
	}
	if err := j.checkSupport(cfg); err != nil {
		return err
	}
	if err := j.checkFits(cfg); err != nil {
		return err
	}
	// Every input is answered: from here the run writes into the output
	// dir, and run.json says how far it got.
	if err := j.startRunLog(cfg, backend); err != nil {
		return err
	}

	contracts, timings, memory, phaseErr := j.runPhases(cfg)
	var shErr *sharedError
	if phaseErr != nil && !errors.As(phaseErr, &shErr) {
		return phaseErr
	}
	j.phase("results")
	rows := report.FromResults(j.comm.Rank(), j.comm.Host(), contracts, timings, memory)
	ran := report.Phases{Contracts: cfg.Contracts.Enabled, Timing: cfg.Timing.Enabled, Memory: cfg.Memory.Enabled,
		Sweep: !cfg.IsSeedCase()}
	if err := j.writeResults(cfg, rows, ran); err != nil {
		return err
	}
	if phaseErr == nil {
		phaseErr = j.gate(cfg)
	}
	status, reason := report.StatusComplete, ""
	if phaseErr != nil {
		status, reason = report.StatusFailed, phaseErr.Error()
	}
	extra, err := j.writeReport(status, reason)
	if err != nil {
		return err
	}
	files := append(report.ResultFiles(j.comm.Size(), ran), extra...)
	if phaseErr != nil {
		// Every file is written, with the failed checks marked False; the
		// run as a whole failed, and run.json says why.
		j.log.writeFiles(report.StatusFailed, phaseErr.Error(), files)
		return phaseErr
	}
	if j.log != nil {
		// Last: every rank's files and the combined ones are in place.
		if err := j.log.write(report.StatusComplete, "", files); err != nil {
			return err
		}
	}
	return nil
}

// writeFiles is write on rank 0 and nothing elsewhere; errors are printed,
// since the run has failed already.
func (l *runLog) writeFiles(status, reason string, files []string) {
	if l == nil {
		return
	}
	if err := l.write(status, reason, files); err != nil {
		fmt.Fprintf(os.Stderr, "rsag: rank 0: writing %s: %v\n", report.RunFile, err)
	}
}

// agree tells every rank whether err is nil on all of them, so that a
// problem one rank sees ends every rank alike instead of leaving the others
// in the next collective. When some rank failed, each returns the shared
// error "<what> on rank(s) [...]: <its own error, or other's>".
func (j *job) agree(err error, code int, what, other string) error {
	j.tr.Arm("agreement between ranks", -1)
	ok, bad, cerr := j.comm.AllTrue(err == nil)
	if cerr != nil || ok {
		return cerr
	}
	if err == nil {
		err = errors.New(other)
	}
	return shared(code, fmt.Errorf("%s on rank(s) %v: %w", what, bad, err))
}

// loadStall reads the debug stall (RSAG_DEBUG_STALL) on every rank and
// agrees on it, so that a malformed value ends every rank alike.
func (j *job) loadStall() error {
	st, err := parseStall(os.Getenv(stallEnv))
	if err := j.agree(err, exitBadArgs, stallEnv+" is malformed", "see that rank's message"); err != nil {
		return err
	}
	j.tr.stall = st
	return nil
}

// startRunLog has rank 0 write run.json saying "running"; every rank
// learns whether it could, so that a failure ends every rank alike.
func (j *job) startRunLog(cfg config.Config, backend string) error {
	var err error
	if j.comm.Rank() == 0 {
		l := &runLog{dir: j.opts.outputDir, rec: report.Run{Version: version, Commit: commit, Backend: backend,
			WorldSize: j.comm.Size(), Config: j.opts.configPath, Started: j.started.UTC().Format(time.RFC3339)}}
		if err = l.write(report.StatusRunning, "", nil); err == nil {
			j.log = l
			j.end.setMarkFailed(func(reason string) { j.fail(reason) })
		}
	}
	if err := j.agree(err, exitFailed, "writing "+report.RunFile+" in "+j.opts.outputDir, "rank 0 could not write it"); err != nil {
		return err
	}
	return nil
}

// requestAbort asks the backend to abort its communicator, if it has one
// (NCCL), and returns a channel closed once it has; nil when there is
// nothing to abort (see ender).
func (j *job) requestAbort() <-chan struct{} {
	type aborter interface{ RequestAbort() <-chan struct{} }
	if a, ok := j.backend.(aborter); ok {
		return a.RequestAbort()
	}
	return nil
}

// loadConfig has rank 0 read the file and broadcast its bytes, so every rank
// parses and validates the same bytes and fails, if it fails, alike.
func (j *job) loadConfig() (config.Config, error) {
	var msg []byte
	if j.comm.Rank() == 0 {
		data, err := os.ReadFile(j.opts.configPath)
		if err != nil {
			msg = append([]byte{1}, fmt.Sprintf("cannot read the config: %v (give an existing TOML file with -config, e.g. configs/smoke.toml)", err)...)
		} else {
			msg = append([]byte{0}, data...)
		}
	}
	j.tr.Arm("config broadcast", -1)
	msg, err := j.comm.BcastBlob(msg, 0)
	if err != nil {
		return config.Config{}, err
	}
	if len(msg) == 0 {
		return config.Config{}, errors.New("config broadcast arrived empty")
	}
	if msg[0] == 1 {
		return config.Config{}, errors.New(string(msg[1:]))
	}
	cfg, err := config.Parse(j.opts.configPath, msg[1:], j.opts.sets)
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate(j.comm.Size())
}

// checkOutputDir makes sure every rank can write its files before any
// collective runs, and that no rank would overwrite an earlier run's
// results without -overwrite.
func (j *job) checkOutputDir() error {
	dir := j.opts.outputDir
	if err := j.checkEarlierResults(); err != nil {
		return err
	}
	err := os.MkdirAll(dir, 0o755)
	if err == nil && j.opts.overwrite {
		err = report.RemoveResults(dir)
	}
	if err == nil {
		var f *os.File
		if f, err = os.CreateTemp(dir, ".rsag-write-test*"); err == nil {
			f.Close()
			err = os.Remove(f.Name())
		}
	}
	if err != nil {
		err = fmt.Errorf("%w; choose another with -output-dir", err)
	}
	if err := j.agree(err, exitBadArgs, "output dir "+dir+" is not writable", "another rank could not write there; choose another with -output-dir"); err != nil {
		return err
	}
	// One directory for every rank: a node-local one would scatter the files.
	j.tr.Arm("output dir check between ranks", -1)
	return outdir.CheckShared(j.comm, dir)
}

// checkEarlierResults refuses, on every rank alike, an output dir that
// holds an earlier run's results (as any rank sees it), unless -overwrite.
func (j *job) checkEarlierResults() error {
	var found []string
	if !j.opts.overwrite {
		// A dir that cannot be read is reported by the write check next.
		found, _ = report.FindResults(j.opts.outputDir)
	}
	if len(found) > 3 {
		found = append(found[:3], fmt.Sprintf("and %d more", len(found)-3))
	}
	j.tr.Arm("agreement between ranks", -1)
	all, err := j.comm.AllGather([]byte(strings.Join(found, ", ")))
	if err != nil {
		return err
	}
	for r, f := range all {
		if len(f) > 0 {
			return fmt.Errorf("output dir %s already holds results of an earlier run (%s, seen by rank %d): "+
				"pass -overwrite to replace them, or choose another -output-dir", j.opts.outputDir, f, r)
		}
	}
	return nil
}

// checkSupport refuses, on every rank alike, a sweep whose dtypes, ops or
// methods the backend cannot run, before any collective.
func (j *job) checkSupport(cfg config.Config) error {
	var err error
	if cfg.Timing.Enabled {
		err = phases.CheckSupport(j.backend, cfg.TimingRuns())
	}
	return j.agree(err, exitBadArgs, "the sweep cannot run", "another rank's backend cannot run it")
}

// checkFits refuses, on every rank alike, a run whose largest phase does
// not fit in the free device memory of some rank, before any collective.
func (j *job) checkFits(cfg config.Config) error {
	world := j.comm.Size()
	var err error
	if cfg.Timing.Enabled {
		err = phases.CheckFits(j.backend, phases.TimingFootprint(world, cfg.TimingRuns()), "timing at the largest size")
	}
	if err == nil && cfg.Memory.Enabled {
		err = phases.CheckFits(j.backend, phases.MemoryFootprint(world, int64(cfg.Memory.PayloadBytes), cfg.Memory.Modes),
			"the memory phase at memory.payload_bytes")
	}
	return j.agree(err, exitBadArgs, "payload too large", "the run does not fit in another rank's device memory")
}

// printHeader gathers every rank's backend description and prints it.
func (j *job) printHeader(cfg config.Config) error {
	info := j.backend.Info()
	info.LocalRank = j.comm.LocalRank()
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	j.tr.Arm("gather of backend descriptions", -1)
	all, err := j.comm.Gather(data, 0)
	if err != nil || j.comm.Rank() != 0 {
		return err
	}
	infos := make([]phases.Info, len(all))
	for r, d := range all {
		if err := json.Unmarshal(d, &infos[r]); err != nil {
			return fmt.Errorf("rank %d's description: %w", r, err)
		}
	}
	j.infos = infos
	j.printf("rsag %s (commit %s): backend %s, %d ranks, config %s\n", version, commit, info.Backend, j.comm.Size(), j.opts.configPath)
	j.printf("  mpi %s\n", mpi.LibraryVersion())
	for _, lib := range info.Libraries {
		j.printf("  %s %s %s\n", lib.Name, lib.Version, lib.Path)
	}
	if info.Driver != "" {
		j.printf("  driver %s\n", info.Driver)
	}
	if err := report.RanksTable(j.out, infos); err != nil {
		return err
	}
	return report.NodesTable(j.out, report.Nodes(infos))
}

// runPhases runs the enabled phases in order. A check that failed on any
// rank stops the run as a sharedError; a backend failure is returned as is.
func (j *job) runPhases(cfg config.Config) (c []phases.ContractResult, t []phases.TimingSample, m []phases.MemoryResult, err error) {
	progress := func(line string) { j.printf("%s\n", line) }
	comm := phases.WatchComm(j.comm, j.tr)
	if cfg.Contracts.Enabled {
		j.phase("contracts")
		if c, err = phases.RunContracts(j.watched); err != nil {
			return c, t, m, fmt.Errorf("contracts on rank %d: %w", j.comm.Rank(), err)
		}
		var failed []string
		for _, r := range c {
			if !r.Correct {
				failed = append(failed, r.Name)
			}
		}
		ok, bad, err := comm.AllTrue(len(failed) == 0)
		if err != nil {
			return c, t, m, err
		}
		if !ok {
			return c, t, m, shared(exitFailed, fmt.Errorf("contracts failed on rank(s) %v (here: %s)", bad, orNone(failed)))
		}
		progress(fmt.Sprintf("contracts: %d held on every rank", len(c)))
	}
	if err := comm.Barrier(); err != nil {
		return c, t, m, err
	}
	if cfg.Timing.Enabled {
		j.phase("timing")
		t, err = phases.RunTiming(j.watched, comm, cfg.TimingRuns(), progress)
		if err != nil {
			return c, t, m, checkShared(err)
		}
	}
	if cfg.Memory.Enabled {
		j.phase("memory")
		m, err = phases.RunMemory(j.watched, comm, int64(cfg.Memory.PayloadBytes), cfg.Memory.Modes, progress)
		if err != nil {
			return c, t, m, checkShared(err)
		}
	}
	return c, t, m, nil
}

// checkShared marks a check failure that every rank agreed on as shared.
func checkShared(err error) error {
	var ce *phases.CheckError
	if errors.As(err, &ce) && ce.Ranks != nil {
		return shared(exitFailed, err)
	}
	return err
}

// writeResults writes this rank's files, then gathers every rank's rows to
// rank 0 for the combined files and the summary tables.
func (j *job) writeResults(cfg config.Config, rows report.Rows, ran report.Phases) error {
	dir := j.opts.outputDir
	werr := report.WriteRankFiles(dir, j.comm.Rank(), rows, ran)
	if err := j.agree(werr, exitFailed, "writing results in "+dir+" failed", "another rank could not write its files"); err != nil {
		return err
	}
	data, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	j.tr.Arm("gather of result rows", -1)
	gathered, err := j.comm.Gather(data, 0)
	if err != nil || j.comm.Rank() != 0 {
		return err
	}
	all := make([]report.Rows, len(gathered))
	for r, d := range gathered {
		if err := json.Unmarshal(d, &all[r]); err != nil {
			return fmt.Errorf("rank %d's rows: %w", r, err)
		}
	}
	if err := report.WriteCombined(dir, all, ran); err != nil {
		return err
	}
	j.all = all
	if err := j.buildSummary(cfg); err != nil {
		return err
	}
	return j.printSummary(all, ran)
}

// buildSummary computes, on rank 0, the statistics of every rank's rows
// once: the tables, the busbw gate, summary.json and the plots all read them.
func (j *job) buildSummary(cfg config.Config) error {
	discard := map[string]int{}
	for _, r := range cfg.Runs {
		discard[r.Name] = r.Discard
	}
	obj, err := report.ConfigObject(cfg)
	if err != nil {
		return err
	}
	j.summary = report.NewSummary(report.SummaryInput{Version: version, Commit: commit, Status: report.StatusRunning,
		Started: j.started, Ended: time.Now(), Config: obj, MPILibrary: mpi.LibraryVersion(), Infos: j.infos,
		Environ: os.Environ(), Rows: report.Merge(j.all), World: j.comm.Size(), Discard: discard})
	return nil
}

// gate fails the run, on every rank alike, when a run's largest size fell
// below its min_busbw_gbps (rank 0 holds the statistics and decides).
func (j *job) gate(cfg config.Config) error {
	var failures []string
	if j.all != nil {
		thresholds := map[string]float64{}
		for _, r := range cfg.Runs {
			thresholds[r.Name] = r.MinBusBWGBps
		}
		failures = report.BusBWGate(j.summary.Timing, thresholds)
	}
	var err error
	if len(failures) > 0 {
		err = errors.New(strings.Join(failures, "; "))
	}
	return j.agree(err, exitFailed, "bus bandwidth below the gate", "rank 0 measured it")
}

func (j *job) printSummary(all []report.Rows, ran report.Phases) error {
	merged := report.Merge(all)
	world := len(all)
	if ran.Contracts {
		if err := report.ContractsTable(j.out, merged.Contracts, world); err != nil {
			return err
		}
	}
	if ran.Timing && len(merged.Timings) > 0 {
		if err := report.TimingsTable(j.out, j.summary.Timing, world, len(j.summary.Nodes)); err != nil {
			return err
		}
	}
	if ran.Memory && len(merged.Memory) > 0 {
		if err := report.MemoryTable(j.out, merged.Memory); err != nil {
			return err
		}
	}
	abs, _ := filepath.Abs(j.opts.outputDir)
	j.printf("results in %s (%.1f s since rank 0 started)\n%s\n", abs, time.Since(j.started).Seconds(), report.ClosingLine(all[0]))
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// writeReport writes, on rank 0, summary.json and the figures (PNG and SVG)
// from every rank's rows, and returns their names in the output dir; it
// does nothing on the other ranks.
func (j *job) writeReport(status, reason string) ([]string, error) {
	if j.all == nil {
		return nil, nil
	}
	dir := j.opts.outputDir
	s := j.summary
	s.Status, s.Reason, s.Ended = status, reason, time.Now().UTC().Format(time.RFC3339)
	figures, err := plot.WriteAll(dir, s.Timing, report.Merge(j.all).Memory)
	if err != nil {
		return nil, err
	}
	if err := report.WriteSummary(dir, s); err != nil {
		return nil, err
	}
	files := []string{report.SummaryFile}
	for _, f := range figures {
		files = append(files, filepath.Base(f))
	}
	return files, nil
}

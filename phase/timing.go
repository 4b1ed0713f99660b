package phase

import (
	"rsag/coll"
	"rsag/config"
	"rsag/internal/schedstat"
	"rsag/phases"
	"rsag/report"
)

// The timing phase: the config's runs, each case timed cycle by cycle.
func init() {
	Register(Phase{Name: report.Timing, Order: 30,
		Enabled: func(cfg config.Config) bool { return cfg.Timing.Enabled },
		Prepare: prepareTiming})
}

func prepareTiming(j Job) (Prepared, error) {
	sweeps := j.Config.Sweeps
	return Prepared{
		Support: func(be coll.Backend) error { return phases.CheckSupport(be, sweeps, j.Groups) },
		Fits: func(be coll.Backend) error {
			return phases.CheckFits(be, phases.TimingFootprint(be, sweeps, j.Groups), "timing at the largest size")
		},
		Run: func(env Env, rows *report.Rows) error {
			env.Progress(phases.ProgressHeader)
			// How long this rank waited for a processor while it timed
			// (report.WithWaits): the phase runs on the main goroutine,
			// locked to the thread that runs the collectives.
			stop := schedstat.Watch()
			samples, err := phases.RunTiming(env.Backend, env.Comm, sweeps, j.Groups, env.Progress)
			rows.Timings = append(rows.Timings, TimingRows(env.Rank, env.Host, samples)...)
			if wall, waited, ok := stop(); ok {
				rows.TimingRanks = append(rows.TimingRanks, report.TimingRankRow{Rank: env.Rank, Seconds: wall.Seconds(), WaitedS: waited.Seconds()})
			}
			return err
		},
	}, nil
}

// TimingRows are one rank's timed samples as rows.
func TimingRows(rank int, host string, samples []phases.TimingSample) []report.TimingRow {
	var rows []report.TimingRow
	for _, x := range samples {
		rows = append(rows, report.TimingRow{Rank: rank, Case: x.Case, Cycle: x.Cycle,
			DurationUS: x.DurationUS, Correct: report.VerdictOf(x.Checked, x.Correct), Host: host})
	}
	return rows
}

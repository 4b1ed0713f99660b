package phase

import (
	"slices"
	"strconv"

	"rsag/coll"
	"rsag/config"
	"rsag/phases"
	"rsag/report"
)

// The soak: many drawn cases, each checked, with the failures diagnosed.
// Every rank has the same soak: rank 0's rows alone carry it.
func init() {
	Register(Phase{Name: report.Soak, Order: 60,
		Enabled: func(cfg config.Config) bool { return cfg.Soak.Enabled },
		Prepare: prepareSoak})
}

func prepareSoak(j Job) (Prepared, error) {
	spec := j.Config.Soak.Spec()
	return Prepared{
		Support: func(be coll.Backend) error { return phases.CheckSoak(be, spec, j.Groups) },
		Fits: func(be coll.Backend) error {
			return phases.CheckFits(be, phases.SoakFootprint(j.World, spec, j.Groups), "the soak at its largest size")
		},
		Run: func(env Env, rows *report.Rows) error {
			var keep func(phases.SoakResult)
			if env.Rank == 0 && env.Checkpoint != nil {
				keep = func(res phases.SoakResult) {
					var so report.Rows
					so.Soak, so.SoakSummary = SoakRows(res)
					env.Checkpoint(so)
				}
			}
			res, err := phases.RunSoak(env.Backend, env.Comm, spec, j.Groups, env.Progress, keep)
			if env.Rank == 0 {
				rows.Soak, rows.SoakSummary = SoakRows(res)
			}
			return err
		},
	}, nil
}

// report.SoakRows are the soak's rows (soak.csv) and summary.json's section; a
// soak that did not run has neither.
func SoakRows(r phases.SoakResult) ([]report.SoakRow, *report.SummarySoak) {
	if len(r.Iterations) == 0 {
		return nil, nil
	}
	sum := &report.SummarySoak{Seed: r.Seed, Iterations: len(r.Iterations), FailedIterations: r.Failed,
		FailureRate: float64(r.Failed) / float64(len(r.Iterations)), ElapsedS: r.Elapsed.Seconds(),
		BytesMoved: r.BytesMoved, Verdict: r.Verdict, SuspectRanks: slices.Clone(r.Suspects), Faults: r.Faults, NotDrawn: []string{}}
	for _, p := range r.Skipped {
		sum.NotDrawn = append(sum.NotDrawn, p.String())
	}
	rows := make([]report.SoakRow, len(r.Iterations))
	for i, it := range r.Iterations {
		row := report.SoakRow{Iteration: it.Iteration, Case: it.Case, BytesMoved: it.BytesMoved, ElapsedS: it.Elapsed.Seconds(),
			WrongElements: it.Wrong, Verdict: it.Verdict}
		if f := it.First; f != nil {
			row.Rank, row.Host, row.Step = formatValueOf(f.Rank), f.Host, string(f.Mode)+" "+f.Collective
			row.Element, row.OffsetBytes = formatValueOf(f.Index), formatValueOf(f.OffsetBytes)
			row.Expected, row.Got, row.ExpectedBits, row.GotBits = report.PyFloat(f.Expected), report.PyFloat(f.Got), f.ExpectedBits, f.GotBits
			sum.Failures = append(sum.Failures, report.SummarySoakFailed{Iteration: it.Iteration, Case: it.Case, Wrong: it.Wrong, Verdict: it.Verdict})
		}
		rows[i] = row
	}
	return rows, sum
}

// formatValueOf spells an integer as the CSVs do.
func formatValueOf[T int | int64](v T) string { return strconv.FormatInt(int64(v), 10) }

package phase

import (
	"fmt"

	"rsag/coll"
	"rsag/config"
	"rsag/phases"
	"rsag/report"
)

// The numerics phase: AllReduce against ReduceScatter + AllGather on the
// same random floats, and each against the exact sum.
func init() {
	Register(Phase{Name: report.Numerics, Order: 50,
		Enabled: func(cfg config.Config) bool { return cfg.Numerics.Enabled },
		Prepare: prepareNumerics})
}

func prepareNumerics(j Job) (Prepared, error) {
	spec := j.Config.Numerics.Spec()
	return Prepared{
		Support: func(be coll.Backend) error { return phases.CheckNumerics(be, spec) },
		Fits: func(be coll.Backend) error {
			return phases.CheckFits(be, phases.NumericsFootprint(j.World, spec), "the numerics phase at its largest size")
		},
		Run: func(env Env, rows *report.Rows) error {
			results, err := phases.RunNumerics(env.Backend, env.Comm, spec)
			if err != nil {
				return err
			}
			rows.Numerics = append(rows.Numerics, NumericsRows(env.Rank, env.Host, results)...)
			for _, x := range results {
				env.Progress(fmt.Sprintf("numerics %-8s %-6s %s (rank 0; largest error %.3g of its bound)",
					x.DType, coll.SizeText(x.SizeBytes), x.Verdict(), x.MaxBoundRatio))
			}
			return nil
		},
	}, nil
}

// NumericsRows are one rank's numerics results as rows.
func NumericsRows(rank int, host string, results []phases.NumericsResult) []report.NumericsRow {
	var rows []report.NumericsRow
	for _, x := range results {
		rows = append(rows, report.NumericsRow{Rank: rank, DType: x.DType.String(), SizeBytes: x.SizeBytes,
			Elements: x.Elements, BitwiseEqual: x.BitwiseEqual, DifferingElements: x.DifferingElements,
			MaxULP: int64(min(x.MaxULP, 1<<62)), MaxAbsErrorDirect: x.MaxAbsErrorDirect,
			MaxAbsErrorDecomposed: x.MaxAbsErrorDecomposed, MaxRelErrorDirect: x.MaxRelErrorDirect,
			MaxRelErrorDecomposed: x.MaxRelErrorDecomposed, UnitRoundoff: x.UnitRoundoff, Bound: x.Bound,
			MaxBoundRatio: x.MaxBoundRatio, WithinBound: x.WithinBound, Host: host})
	}
	return rows
}

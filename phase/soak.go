package phase

import (
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
			res, err := phases.RunSoak(env.Backend, env.Comm, spec, j.Groups, env.Progress)
			if env.Rank == 0 {
				rows.Soak, rows.SoakSummary = report.SoakRows(res)
			}
			return err
		},
	}, nil
}

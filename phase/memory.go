package phase

import (
	"rsag/coll"
	"rsag/config"
	"rsag/phases"
	"rsag/report"
)

// The memory phase: what each buffer-lifetime strategy holds, steady and
// at its peak.
func init() {
	Register(Phase{Name: report.Memory, Order: 40,
		Enabled: func(cfg config.Config) bool { return cfg.Memory.Enabled },
		Prepare: prepareMemory})
}

func prepareMemory(j Job) (Prepared, error) {
	run := phases.MemoryRun{PayloadBytes: int64(j.Config.Memory.PayloadBytes), Modes: j.Config.Memory.Modes, Groups: j.Groups}
	return Prepared{
		Fits: func(be coll.Backend) error {
			return phases.CheckFits(be, phases.MemoryFootprint(j.World, run), "the memory phase at memory.payload_bytes")
		},
		Run: func(env Env, rows *report.Rows) error {
			results, err := phases.RunMemory(env.Backend, env.Comm, run, env.Progress)
			for _, x := range results {
				rows.Memory = append(rows.Memory, report.MemoryRow{Rank: env.Rank, Mode: x.Mode, PayloadBytes: x.PayloadBytes,
					BaselineBytes: x.BaselineBytes, SteadyDeltaBytes: x.SteadyDeltaBytes, PeakDeltaBytes: x.PeakDeltaBytes,
					Correct: x.Correct, Host: env.Host, AnalyticSteady: x.AnalyticSteady, AnalyticPeak: x.AnalyticPeak,
					DeviceSteadyDelta: x.DeviceSteadyDelta, DevicePeakDelta: x.DevicePeakDelta})
			}
			return err
		},
	}, nil
}

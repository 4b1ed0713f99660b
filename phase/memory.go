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
			rows.Memory = append(rows.Memory, MemoryRows(env.Rank, env.Host, results)...)
			return err
		},
	}, nil
}

// MemoryRows are one rank's memory results as rows.
func MemoryRows(rank int, host string, results []phases.MemoryResult) []report.MemoryRow {
	var rows []report.MemoryRow
	for _, x := range results {
		rows = append(rows, report.MemoryRow{Rank: rank, Mode: x.Mode, PayloadBytes: x.PayloadBytes,
			BaselineBytes: x.BaselineBytes, SteadyDeltaBytes: x.SteadyDeltaBytes, PeakDeltaBytes: x.PeakDeltaBytes,
			Correct: x.Correct, Host: host, AnalyticSteady: x.AnalyticSteady, AnalyticPeak: x.AnalyticPeak,
			DeviceSteadyDelta: x.DeviceSteadyDelta, DevicePeakDelta: x.DevicePeakDelta})
	}
	return rows
}

// The page's memory section: what each buffer-lifetime strategy holds.

package page

import (
	"fmt"
	"slices"

	"rsag/report"
	"rsag/report/plot"
)

func memorySection(s report.Summary, figs map[string][]plot.Inline) section {
	sec := section{ID: "memory", Title: "Memory",
		How: "Memory (binary units: 1 MiB = 1048576 bytes; summary.json has the bytes) above the baseline while each strategy holds its result (steady) and at its highest (peak), on the rank where they are " +
			"highest, against what the buffers' sizes say they must be; x is the multiple of the payload. The device count (cuMemGetInfo) includes the library's own buffers."}
	if len(s.Memory) == 0 {
		sec.Empty = absent(s, "memory")
		return sec
	}
	t := &table{Sortable: true, Head: heads("mode", "steady", "x", "peak", "x", "analytic steady / peak", "match", "device steady / peak", "checked")}
	for _, m := range s.Memory {
		if len(m.Ranks) == 0 {
			continue
		}
		var steady, peak, dSteady, dPeak []int64
		for _, r := range m.Ranks {
			steady, peak = append(steady, r.SteadyDeltaBytes), append(peak, r.PeakDeltaBytes)
			if r.DeviceSteadyDeltaBytes != nil && r.DevicePeakDeltaBytes != nil {
				dSteady, dPeak = append(dSteady, *r.DeviceSteadyDeltaBytes), append(dPeak, *r.DevicePeakDeltaBytes)
			}
		}
		payload := float64(m.PayloadBytes)
		device := "n/a"
		if len(dSteady) > 0 {
			device = rangeText(dSteady) + " / " + rangeText(dPeak)
		}
		r := row{Cells: []cell{plain(m.Mode), {Text: rangeText(steady), Sort: fmt.Sprint(slices.Max(steady)), Class: "n"},
			num("%.3f", float64(slices.Max(steady))/payload), {Text: rangeText(peak), Sort: fmt.Sprint(slices.Max(peak)), Class: "n"},
			num("%.3f", float64(slices.Max(peak))/payload), {Text: report.BytesText(m.AnalyticSteadyBytes) + " / " + report.BytesText(m.AnalyticPeakBytes), Class: "n"},
			yesNo(m.MatchesAnalytic), {Text: device, Class: "n"}, yesNo(m.Correct)}}
		if !m.Correct {
			r.Class = "bad"
		}
		t.Rows = append(t.Rows, r)
	}
	sec.Blocks = append([]block{{Table: t}}, figuresFor(figs, plot.MemoryByMode, "")...)
	return sec
}

func rangeText(v []int64) string {
	lo, hi := slices.Min(v), slices.Max(v)
	if lo == hi {
		return report.BytesText(lo)
	}
	return report.BytesText(lo) + ".." + report.BytesText(hi)
}

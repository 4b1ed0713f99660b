package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"rsag/phases"
)

// newTable is an ASCII table (job logs are often read in plain terminals
// and editors) whose header is printed as given.
func newTable(w io.Writer, header ...string) *tablewriter.Table {
	t := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignRight, PerColumn: []tw.Align{tw.AlignLeft}}),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
	)
	t.Header(header)
	return t
}

// RanksTable lists every rank's host and device.
func RanksTable(w io.Writer, infos []phases.Info) error {
	fmt.Fprintln(w, "Ranks")
	t := newTable(w, "rank", "host", "device", "bus id")
	for r, in := range infos {
		t.Append([]string{fmt.Sprint(r), in.Host, in.Device, orDash(in.BusID)})
	}
	return t.Render()
}

// ContractsTable shows each contract and the ranks where it held, so that it
// stays readable at any world size.
func ContractsTable(w io.Writer, rows []ContractRow, world int) error {
	fmt.Fprintln(w, "Contracts")
	t := newTable(w, "contract", "held on", "failed on ranks", "detail (rank 0)")
	for _, name := range uniqueInOrder(rows, func(r ContractRow) string { return r.Name }) {
		held, detail := 0, ""
		var failed []string
		for _, r := range rows {
			if r.Name != name {
				continue
			}
			if r.Correct {
				held++
			} else {
				failed = append(failed, fmt.Sprint(r.Rank))
			}
			if r.Rank == 0 {
				detail = r.Detail
			}
		}
		t.Append([]string{name, fmt.Sprintf("%d/%d", held, world), orDash(strings.Join(failed, " ")), truncate(detail, 60)})
	}
	return t.Render()
}

// SizeSummary is one size's statistics over every rank and cycle.
type SizeSummary struct {
	SizeBytes                          int64
	DirectMedian, DirectMin, DirectMax float64
	DecompMedian, DecompMin, DecompMax float64
	Ratio                              float64 // decomposed / direct, of the medians
	DirectAlgBW, DirectBusBW           float64 // GB/s
	DecompAlgBW, DecompBusBW           float64
}

// SummarizeTimings computes per-size statistics over all ranks' samples.
// Bandwidths follow nccl-tests: algbw = size / median time, busbw = algbw x
// 2(W-1)/W for AllReduce and, for ReduceScatter+AllGather, the sum of their
// (W-1)/W factors, which is the same.
func SummarizeTimings(rows []TimingRow, world int) []SizeSummary {
	var out []SizeSummary
	for _, size := range uniqueInOrder(rows, func(r TimingRow) int64 { return r.SizeBytes }) {
		var direct, decomp []float64
		for _, r := range rows {
			if r.SizeBytes != size {
				continue
			}
			if r.Mode == phases.Direct {
				direct = append(direct, r.DurationUS)
			} else {
				decomp = append(decomp, r.DurationUS)
			}
		}
		s := SizeSummary{SizeBytes: size,
			DirectMedian: phases.Median(direct), DirectMin: slices.Min(direct), DirectMax: slices.Max(direct),
			DecompMedian: phases.Median(decomp), DecompMin: slices.Min(decomp), DecompMax: slices.Max(decomp)}
		s.Ratio = s.DecompMedian / s.DirectMedian
		s.DirectAlgBW = float64(size) / s.DirectMedian / 1e3
		s.DecompAlgBW = float64(size) / s.DecompMedian / 1e3
		s.DirectBusBW = s.DirectAlgBW * phases.AllReduceColl.BusFactor(world)
		s.DecompBusBW = s.DecompAlgBW * (phases.ReduceScatterColl.BusFactor(world) + phases.AllGatherColl.BusFactor(world))
		out = append(out, s)
	}
	return out
}

// TimingsTable prints SummarizeTimings.
func TimingsTable(w io.Writer, rows []TimingRow, world int) error {
	fmt.Fprintf(w, "Timings (us, median [min..max] over %d ranks and all cycles; bandwidth GB/s from the median)\n", world)
	t := newTable(w, "size", "direct AllReduce", "RS + AG", "RS+AG / AR", "AR algbw", "AR busbw", "RS+AG algbw", "RS+AG busbw")
	for _, s := range SummarizeTimings(rows, world) {
		t.Append([]string{SizeText(s.SizeBytes),
			fmt.Sprintf("%.2f [%.2f..%.2f]", s.DirectMedian, s.DirectMin, s.DirectMax),
			fmt.Sprintf("%.2f [%.2f..%.2f]", s.DecompMedian, s.DecompMin, s.DecompMax),
			fmt.Sprintf("%.3f", s.Ratio),
			fmt.Sprintf("%.2f", s.DirectAlgBW), fmt.Sprintf("%.2f", s.DirectBusBW),
			fmt.Sprintf("%.2f", s.DecompAlgBW), fmt.Sprintf("%.2f", s.DecompBusBW)})
	}
	return t.Render()
}

// MemoryTable shows each mode's deltas next to the analytic values. Where
// ranks differ, the range over ranks is shown.
func MemoryTable(w io.Writer, rows []MemoryRow) error {
	fmt.Fprintln(w, "Memory (bytes above the baseline; x = multiples of the payload)")
	t := newTable(w, "mode", "steady", "x", "peak", "x", "analytic steady / peak", "match", "device steady / peak", "checked")
	for _, mode := range uniqueInOrder(rows, func(r MemoryRow) string { return r.Mode }) {
		var m []MemoryRow
		for _, r := range rows {
			if r.Mode == mode {
				m = append(m, r)
			}
		}
		field := func(f func(MemoryRow) int64) []int64 {
			v := make([]int64, len(m))
			for i, r := range m {
				v[i] = f(r)
			}
			return v
		}
		steady := field(func(r MemoryRow) int64 { return r.SteadyDeltaBytes })
		peak := field(func(r MemoryRow) int64 { return r.PeakDeltaBytes })
		payload := float64(m[0].PayloadBytes)
		match, checked := "yes", "yes"
		for _, r := range m {
			if r.SteadyDeltaBytes != r.AnalyticSteady || r.PeakDeltaBytes != r.AnalyticPeak {
				match = "NO"
			}
			if !r.Correct {
				checked = "NO"
			}
		}
		device := "n/a"
		if m[0].DeviceSteadyDelta >= 0 {
			device = rangeText(field(func(r MemoryRow) int64 { return r.DeviceSteadyDelta })) + " / " +
				rangeText(field(func(r MemoryRow) int64 { return r.DevicePeakDelta }))
		}
		t.Append([]string{mode, rangeText(steady), fmt.Sprintf("%.3f", float64(slices.Max(steady))/payload),
			rangeText(peak), fmt.Sprintf("%.3f", float64(slices.Max(peak))/payload),
			fmt.Sprintf("%d / %d", m[0].AnalyticSteady, m[0].AnalyticPeak), match, device, checked})
	}
	return t.Render()
}

// ClosingLine is the seed's last line, counted on rank 0.
func ClosingLine(rows Rows) string {
	return fmt.Sprintf("contracts_per_rank=%d timings_per_rank=%d memory_modes_per_rank=%d",
		len(rows.Contracts), len(rows.Timings), len(rows.Memory))
}

// SizeText writes a byte count as 1K, 64K, 256M.
func SizeText(b int64) string { return phases.SizeText(b) }

func rangeText(v []int64) string {
	lo, hi := slices.Min(v), slices.Max(v)
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d..%d", lo, hi)
}

func uniqueInOrder[R any, K comparable](rows []R, key func(R) K) []K {
	var out []K
	seen := map[K]bool{}
	for _, r := range rows {
		if k := key(r); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

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

// RanksTable lists every rank's host, node-local rank and device.
func RanksTable(w io.Writer, infos []phases.Info) error {
	fmt.Fprintln(w, "Ranks")
	t := newTable(w, "rank", "host", "local rank", "device", "bus id")
	for r, in := range infos {
		t.Append([]string{fmt.Sprint(r), in.Host, fmt.Sprint(in.LocalRank), in.Device, orDash(in.BusID)})
	}
	return t.Render()
}

// NodesTable lists every host with its ranks, their node-local ranks and
// devices: the shape of the job at a glance, at any world size.
func NodesTable(w io.Writer, nodes []SummaryNode) error {
	fmt.Fprintln(w, "Nodes")
	t := newTable(w, "host", "ranks", "local ranks", "device")
	for _, n := range nodes {
		t.Append([]string{n.Host, listText(n.Ranks), listText(n.LocalRanks), n.Device})
	}
	return t.Render()
}

// listText writes ascending runs of three or more as a range: 0-3,6,8.
func listText(v []int) string {
	var parts []string
	for i := 0; i < len(v); {
		j := i
		for j+1 < len(v) && v[j+1] == v[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("%d-%d", v[i], v[j]))
		} else {
			for k := i; k <= j; k++ {
				parts = append(parts, fmt.Sprint(v[k]))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
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

// TimingsTable prints each case's direct and decomposed statistics, from
// TimingStats: a sample is the slowest rank's time. Dimensions that do not
// vary over the sweep are named once above the table instead of in columns.
// A run over more than one node says so: its bandwidth is the network's
// between the nodes, not NVLink's.
func TimingsTable(w io.Writer, stats []TimingStat, world, nodes int) error {
	dims := []struct {
		name string
		of   func(TimingStat) string
	}{
		{"run", func(s TimingStat) string { return s.Run }},
		{"dtype", func(s TimingStat) string { return s.DType }},
		{"op", func(s TimingStat) string { return s.Op }},
		{"placement", func(s TimingStat) string { return s.Placement }},
		{"method", func(s TimingStat) string {
			if s.Batch > 1 {
				return fmt.Sprintf("%s x%d", s.Method, s.Batch)
			}
			return s.Method
		}},
	}
	var header, fixed []string
	var varying []func(TimingStat) string
	for _, d := range dims {
		if len(uniqueInOrder(stats, d.of)) > 1 {
			header = append(header, d.name)
			varying = append(varying, d.of)
		} else if len(stats) > 0 {
			fixed = append(fixed, d.of(stats[0]))
		}
	}
	fmt.Fprintf(w, "Timings (us per operation; a sample is the slowest of %d ranks; median [p10..p90]; GB/s from the median) %s\n",
		world, strings.Join(fixed, " "))
	if nodes > 1 {
		fmt.Fprintf(w, "  across %d nodes: the bandwidth is bounded by the network between them (NIC, switch), not by NVLink\n", nodes)
	}
	header = append(header, "size", "direct AllReduce", "RS + AG", "RS+AG / AR", "AR busbw", "RS+AG busbw", "slowest rank")
	t := newTable(w, header...)
	decomp := map[CaseKey]TimingStat{}
	for _, s := range stats {
		if s.Mode == string(phases.Decomposed) {
			decomp[s.Pair()] = s
		}
	}
	for _, d := range stats {
		c, ok := decomp[d.Pair()]
		if d.Mode != string(phases.Direct) || !ok {
			continue
		}
		var row []string
		for _, of := range varying {
			row = append(row, of(d))
		}
		row = append(row, SizeText(d.SizeBytes),
			fmt.Sprintf("%.2f [%.2f..%.2f]", d.MedianUS, d.P10US, d.P90US),
			fmt.Sprintf("%.2f [%.2f..%.2f]", c.MedianUS, c.P10US, c.P90US),
			fmt.Sprintf("%.3f", c.MedianUS/d.MedianUS),
			fmt.Sprintf("%.2f", d.BusBWGBps), fmt.Sprintf("%.2f", c.BusBWGBps),
			fmt.Sprintf("%d / %d", d.SlowestRank, c.SlowestRank))
		t.Append(row)
	}
	return t.Render()
}

// BusBWGate returns, for each run with a positive threshold (GB/s), every
// case at that run's largest size whose direct AllReduce bus bandwidth
// falls below it: a cluster health check gates on the fabric, which the
// direct AllReduce measures.
func BusBWGate(stats []TimingStat, thresholds map[string]float64) []string {
	largest := map[string]int64{}
	for _, s := range stats {
		largest[s.Run] = max(largest[s.Run], s.SizeBytes)
	}
	var failures []string
	for _, s := range stats {
		min := thresholds[s.Run]
		if min <= 0 || s.Mode != string(phases.Direct) || s.SizeBytes != largest[s.Run] || s.BusBWGBps >= min {
			continue
		}
		failures = append(failures, fmt.Sprintf("run %s %s %s %s %s %s: AllReduce busbw %.2f GB/s < min_busbw_gbps %.2f",
			s.Run, SizeText(s.SizeBytes), s.DType, s.Op, s.Placement, s.Method, s.BusBWGBps, min))
	}
	return failures
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

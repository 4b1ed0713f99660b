package report

import (
	"math"
	"rsag/internal/termsafe"

	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"rsag/coll"
	"rsag/internal/rankset"
)

// newTable is an ASCII table (job logs are often read in plain terminals
// and editors) whose header is printed as given.
func newTable(w io.Writer, header ...string) *tablewriter.Table {
	// A cell can hold a string from another rank or a file (a host name,
	// a run's name): it reaches the terminal through termsafe.
	t := tablewriter.NewTable(termsafe.NewWriter(w),
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignRight, PerColumn: []tw.Align{tw.AlignLeft}}),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
	)
	t.Header(header)
	return t
}

// RanksTable lists every rank's host, node-local rank and device.
func RanksTable(w io.Writer, infos []coll.Info) error {
	if len(infos) > FoldRanksAbove {
		_, err := fmt.Fprintf(w, "Ranks: %d, one row a node in the Nodes table (above %d ranks the rows fold)\n", len(infos), FoldRanksAbove)
		return err
	}
	fmt.Fprintln(w, "Ranks")
	t := newTable(w, "rank", "host", "local rank", "device", "bus id")
	for r, in := range infos {
		t.Append([]string{fmt.Sprint(r), in.Host, fmt.Sprint(in.LocalRank), in.Device, orDash(in.BusID)})
	}
	return t.Render()
}

// FoldRanksAbove is the most ranks the Ranks table lists one by one, in
// the terminal and on the page; above it the Nodes table, one row a node
// with the ranks as ranges, says the same in a row a node.
const FoldRanksAbove = 64

// NodesTable lists every host with its ranks, their node-local ranks and
// devices: the shape of the job at a glance, at any world size.
// With the hierarchy on, it shows each rank's group as well.
func NodesTable(w io.Writer, nodes []SummaryNode) error {
	fmt.Fprintln(w, "Nodes")
	grouped := slices.ContainsFunc(nodes, func(n SummaryNode) bool { return len(n.Groups) > 0 })
	header := []string{"host", "ranks", "local ranks", "device"}
	if grouped {
		header = append(header, "hierarchy groups")
	}
	t := newTable(w, header...)
	for _, n := range nodes {
		row := []string{n.Host, listText(n.Ranks), listText(n.LocalRanks), n.Device}
		if grouped {
			row = append(row, groupsText(n.Groups))
		}
		t.Append(row)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if ranks, groups := groupCount(nodes); grouped && groups == 1 && ranks > 1 {
		fix := "run on several nodes, or on a number of ranks that splits into equal groups"
		if d := divisorsBelow(ranks); len(d) > 0 {
			fix = fmt.Sprintf("set hierarchy.group_size to %s, or run on several nodes", strings.Join(d, " or "))
		}
		fmt.Fprintf(w, "note: one hierarchy group holds all %d ranks, so the AllReduce across groups has one member and the hierarchical "+
			"mode is ReduceScatter + AllGather within the group: %s\n", ranks, fix)
	}
	return nil
}

// divisorsBelow lists the group sizes from 2 that split n ranks into
// two or more equal groups.
func divisorsBelow(n int) []string {
	var d []string
	for g := 2; g < n; g++ {
		if n%g == 0 {
			d = append(d, fmt.Sprint(g))
		}
	}
	return d
}

// groupCount is how many ranks the nodes have, in how many hierarchy groups.
func groupCount(nodes []SummaryNode) (ranks, groups int) {
	seen := map[int]bool{}
	for _, n := range nodes {
		ranks += len(n.Ranks)
		for _, g := range n.Groups {
			seen[g] = true
		}
	}
	return ranks, len(seen)
}

// groupsText writes each rank's group in rank order: "0,0,1,1".
func groupsText(g []int) string {
	parts := make([]string, len(g))
	for i, v := range g {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

// listText writes ascending runs of three or more as a range: 0-3,6,8.
func listText(v []int) string { return ListText(v, ",") }

// ListText writes ascending runs of three or more as a range, the parts
// joined by sep: "0-3,6,8" (rankset.Join: bounded for any world).
func ListText(v []int, sep string) string { return rankset.Join(v, sep) }

// WriteTables prints the tables of the phases that ran, from the summary:
// each section's (its checks' Table, checks.go, in their order), then each
// phase's with a table of its own.
func WriteTables(w io.Writer, s Summary, ran Phases) error {
	for _, c := range checkers {
		if c.Table == nil || !ran.Has(c.Phase) || (c.Has != nil && !c.Has(s)) {
			continue
		}
		if err := c.Table(w, s); err != nil {
			return err
		}
	}
	return PhaseTables(w, s.Phases)
}

// timingTables are the timing phase's tables: the timings, the model and
// the fastest configuration.
func timingTables(w io.Writer, s Summary) error {
	if err := TimingsTable(w, s.Timing, s.WorldSize, len(s.Nodes)); err != nil {
		return err
	}
	for _, note := range []string{CrowdedNote(s.Nodes), s.GPUShared} {
		if note != "" && len(s.Timing) > 0 {
			fmt.Fprintf(w, "note: %s\n", note)
		}
	}
	if err := ModelTable(w, s); err != nil {
		return err
	}
	return FastestTable(w, s.Timing)
}

// NumericsTable says, per dtype and size, whether AllReduce and ReduceScatter
// + AllGather gave the same bits on the same random floats, and how far each
// is from the exact sum against the error bound of summing W terms.
func NumericsTable(w io.Writer, rows []SummaryNumerics) error {
	fmt.Fprintln(w, "Numerics (AllReduce vs RS + AG on the same random floats; errors against the exact sum, worst rank)")
	t := newTable(w, "dtype", "size", "AR vs RS+AG: elements differing", "max abs error AR", "RS+AG", "bound", "error / bound", "within")
	for _, n := range rows {
		verdict := "none: bitwise equal"
		if !n.BitwiseEqual {
			verdict = fmt.Sprintf("%d of %d, <= %d ULP", n.DifferingElements, n.Elements, n.MaxULP)
		}
		t.Append([]string{n.DType, SizeText(n.SizeBytes), verdict, fmt.Sprintf("%.3g", n.MaxAbsErrorDirect),
			fmt.Sprintf("%.3g", n.MaxAbsErrorDecomposed), fmt.Sprintf("%.3g", n.Bound), fmt.Sprintf("%.3f", n.MaxBoundRatio),
			yesNo(n.WithinBound)})
	}
	return t.Render()
}

// ContractsTable shows each contract and the ranks where it held, so that it
// stays readable at any world size.
func ContractsTable(w io.Writer, contracts []SummaryContract, world int) error {
	fmt.Fprintln(w, "Contracts")
	t := newTable(w, "contract", "held on", "failed on ranks", "detail (rank 0)")
	for _, c := range contracts {
		failed := make([]string, len(c.FailedRanks))
		for i, r := range c.FailedRanks {
			failed[i] = fmt.Sprint(r)
		}
		t.Append([]string{c.Name, fmt.Sprintf("%d/%d", c.HeldOn, world), orDash(strings.Join(failed, " ")), truncate(c.Detail, 46)})
	}
	return t.Render()
}

// TimingsTable prints a row for each case and timed mode, from
// TimingStats: a sample is the slowest rank's time in a cycle, and every
// figure is a statistic over the kept cycles, named in the header (the
// median with p10..p90, the p99 and the maximum, the bus bandwidth from the
// median, the median over direct AllReduce's, and the rank whose own median
// is the highest). Modes come in coll.Modes' order, under their short
// names, which a line under the table spells out. Dimensions that do not
// vary over the sweep are named once above the table instead of in
// columns; a table wider than the terminal is split by its first varying
// dimension (foldTable). A run over more than one node says so: its
// bandwidth is the network's between the nodes, not NVLink's.
func TimingsTable(w io.Writer, stats []TimingStat, world, nodes int) error {
	var dims, fixed []string
	var varying []func(coll.Case) string
	for _, d := range coll.Dims {
		of := func(s TimingStat) string { return d.Text(s.Case) }
		if len(uniqueInOrder(stats, of)) > 1 {
			dims = append(dims, d.Name)
			varying = append(varying, d.Text)
		} else if v := firstOf(stats, of); v != "" && v != d.Usual {
			fixed = append(fixed, v)
		}
	}
	var modes []coll.TimedMode
	for _, name := range coll.Modes {
		if slices.ContainsFunc(stats, func(s TimingStat) bool { return s.Mode == name }) {
			m, _ := coll.ModeOf(name)
			modes = append(modes, m)
		}
	}
	byKey := map[coll.Case]TimingStat{}
	var pairs []coll.Case
	for _, s := range stats {
		byKey[s.Case] = s
		if !slices.Contains(pairs, s.Pair()) {
			pairs = append(pairs, s.Pair())
		}
	}
	fmt.Fprintf(w, "Timings (us per operation; a sample is the slowest of %d ranks in a cycle; statistics over the kept cycles; "+
		"busbw in GB/s from the median) %s\n", world, strings.Join(fixed, " "))
	if nodes > 1 {
		fmt.Fprintf(w, "  across %d nodes: the bandwidth is bounded by the network between them (NIC, switch), not by NVLink\n", nodes)
	}
	direct := slices.ContainsFunc(modes, isMode(coll.Direct))
	rest := []string{"size", "mode", "median [p10..p90]", "p99", "max", "busbw"}
	if direct && len(modes) > 1 {
		rest = append(rest, "vs AR")
	}
	rest = append(rest, "slowest")
	var rows [][]string
	for _, pair := range pairs {
		at := func(m coll.Mode) (TimingStat, bool) {
			k := pair
			k.Mode = m
			s, ok := byKey[k]
			return s, ok
		}
		d, haveDirect := at(coll.Direct)
		for _, m := range modes {
			s, ok := at(m.Name)
			if !ok {
				continue
			}
			var row []string
			for _, of := range varying {
				row = append(row, of(s.Case))
			}
			row = append(row, SizeText(s.SizeBytes), m.Short,
				fmt.Sprintf("%s [%s..%s]", USText(s.MedianUS), USText(s.P10US), USText(s.P90US)),
				USText(s.P99US), USText(s.MaxUS), fmt.Sprintf("%.2f", s.BusBWGBps))
			if direct && len(modes) > 1 {
				ratio := "-"
				if m.Name != coll.Direct && haveDirect && d.MedianUS > 0 {
					ratio = fmt.Sprintf("%.3f", s.MedianUS/d.MedianUS)
				}
				row = append(row, ratio)
			}
			rows = append(rows, append(row, fmt.Sprint(s.SlowestRank)))
		}
	}
	if err := foldTable(w, dims, rest, rows); err != nil {
		return err
	}
	var legend []string
	for _, m := range modes {
		legend = append(legend, m.Short+" "+m.Title)
	}
	fmt.Fprintf(w, "modes: %s; vs AR: the mode's median / direct AllReduce's; slowest: the rank whose own median is highest\n",
		strings.Join(legend, ", "))
	return nil
}

// foldTable renders a table of the dims columns then the rest; a table
// wider than TerminalWidth is split by its first dimension instead, a
// table per value under a line that names it, and so on down the
// dimensions until it fits (or none is left).
func foldTable(w io.Writer, dims, rest []string, rows [][]string) error {
	return foldTableAt(w, dims, rest, rows, "")
}

func foldTableAt(w io.Writer, dims, rest []string, rows [][]string, named string) error {
	var b bytes.Buffer
	t := newTable(&b, append(slices.Clone(dims), rest...)...)
	for _, r := range rows {
		t.Append(r)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if tableWidth(b.String()) <= TerminalWidth || len(dims) == 0 {
		if named != "" {
			fmt.Fprintln(w, named)
		}
		_, err := w.Write(b.Bytes())
		return err
	}
	for _, v := range uniqueInOrder(rows, func(r []string) string { return r[0] }) {
		var sub [][]string
		for _, r := range rows {
			if r[0] == v {
				sub = append(sub, r[1:])
			}
		}
		name := dims[0] + " " + v
		if named != "" {
			name = named + ", " + name
		}
		if err := foldTableAt(w, dims[1:], rest, sub, name); err != nil {
			return err
		}
	}
	return nil
}

// FastestTable names, for each size and mode of a sweep over NCCL's fast
// paths, the configuration (buffers, CTA policy, method) with the lowest
// median, and how much faster it is than the best plain buffers on a
// default communicator: what registration, symmetric windows or the CTA
// policy buy. Nothing is printed for a sweep of the seed's configuration.
func FastestTable(w io.Writer, stats []TimingStat) error {
	rows := Fastest(stats)
	if rows == nil {
		return nil
	}
	fmt.Fprintln(w, "Fastest configuration (buffers/cta policy, method) per size and mode, against the best plain/default")
	t := newTable(w, "run", "dtype", "op", "placement", "size", "mode", "fastest", "median us", "plain/default", "median us", "gain")
	for _, b := range rows {
		g := b.Problem
		base, baseUS, gain := "-", "-", "-"
		if b.HaveBaseline {
			base, baseUS = methodOf(b.Baseline), fmt.Sprintf("%.2f", b.Baseline.MedianUS)
			if b.Fastest.MedianUS > 0 {
				gain = fmt.Sprintf("%.2fx", b.Baseline.MedianUS/b.Fastest.MedianUS)
			}
		}
		t.Append([]string{g.Run, g.DType.String(), g.Op.String(), string(g.Placement), SizeText(g.SizeBytes), string(g.Mode),
			orDash(variantOf(b.Fastest)) + " " + methodOf(b.Fastest), fmt.Sprintf("%.2f", b.Fastest.MedianUS), base, baseUS, gain})
	}
	return t.Render()
}

// CaseColumns are the columns that name the cases of stats, for a table
// with a row per case and mode: the run, the size, every other dimension
// that has no usual value or strays from it, and the mode; cells spells a
// case.
func CaseColumns(stats []TimingStat) (header []string, cells func(coll.Case) []string) {
	var of []func(coll.Case) string
	for _, d := range coll.Dims[1:] {
		if d.Usual == "" || slices.ContainsFunc(stats, func(s TimingStat) bool { return d.Text(s.Case) != d.Usual }) {
			header, of = append(header, d.Name), append(of, d.Text)
		}
	}
	first := coll.Dims[0]
	header = append(append([]string{first.Name, "size"}, header...), "mode")
	return header, func(c coll.Case) []string {
		row := []string{first.Text(c), SizeText(c.SizeBytes)}
		for _, f := range of {
			row = append(row, f(c))
		}
		return append(row, string(c.Mode))
	}
}

// FastestRow is one problem of a sweep over NCCL's fast paths (a case but
// for its configuration: method, batch, buffers, policy) with its fastest
// configuration, and the best plain buffers on a default communicator.
type FastestRow struct {
	Problem           coll.Case
	Fastest, Baseline TimingStat
	HaveBaseline      bool
}

// Fastest is each problem's fastest configuration, in the order the
// problems first appear; nil when every case ran the seed's configuration.
func Fastest(stats []TimingStat) []FastestRow {
	if len(uniqueInOrder(stats, func(s TimingStat) coll.Variant { return s.Variant() })) < 2 {
		return nil
	}
	var out []FastestRow
	index := map[coll.Case]int{}
	for _, s := range stats {
		g := s.Case
		g.Method, g.Batch, g.Buffers, g.CTAPolicy = "", 0, "", ""
		i, ok := index[g]
		if !ok {
			i = len(out)
			index[g] = i
			out = append(out, FastestRow{Problem: g, Fastest: s})
		}
		b := &out[i]
		if s.MedianUS < b.Fastest.MedianUS {
			b.Fastest = s
		}
		if variantOf(s) == "" && (!b.HaveBaseline || s.MedianUS < b.Baseline.MedianUS) {
			b.Baseline, b.HaveBaseline = s, true
		}
	}
	return out
}

func variantOf(s TimingStat) string { return coll.VariantText(s.Buffers, s.CTAPolicy) }

func methodOf(s TimingStat) string { return coll.MethodText(s.Method, s.Batch) }

func firstOf(stats []TimingStat, of func(TimingStat) string) string {
	if len(stats) == 0 {
		return ""
	}
	return of(stats[0])
}

func isMode(name coll.Mode) func(coll.TimedMode) bool {
	return func(m coll.TimedMode) bool { return m.Name == name }
}

// BusBWGate returns, for each run with a positive threshold (GB/s), every
// case at that run's largest size whose direct AllReduce bus bandwidth
// falls below it: a cluster health check gates on the fabric, which the
// direct AllReduce measures.
func BusBWGate(stats []TimingStat, gates map[string]Gate) []string {
	var failures []string
	for _, g := range Gates(stats, gates) {
		if !g.Passed() {
			failures = append(failures, g.Failure())
		}
	}
	return failures
}

// Gate is a run's bus-bandwidth gate: min_busbw_gbps, judged on the
// busbw of min_busbw_statistic's time ("median" or "p99").
type Gate struct {
	MinGBps   float64
	Statistic string
}

// GateResult is one run's bus-bandwidth gate: its min_busbw_gbps and the
// direct AllReduce at the run's largest size, one per case of that size.
type GateResult struct {
	Run string
	Gate
	Stat TimingStat
}

// BusBWGBps is the case's busbw at the gate's statistic: the median's
// busbw scaled by median / p99 for "p99" (busbw is inversely
// proportional to the time).
func (g GateResult) BusBWGBps() float64 {
	if g.Statistic == "p99" && g.Stat.P99US > 0 {
		return g.Stat.BusBWGBps * g.Stat.MedianUS / g.Stat.P99US
	}
	return g.Stat.BusBWGBps
}

// Passed is whether the case met the gate.
func (g GateResult) Passed() bool { return g.BusBWGBps() >= g.MinGBps }

// Name is the case the gate judged: "run default 1 MiB float32 sum out-of-place per-op".
func (g GateResult) Name() string {
	s := g.Stat
	return fmt.Sprintf("run %s %s %s %s %s %s", s.Run, SizeText(s.SizeBytes), s.DType, s.Op, s.Placement, s.Method)
}

// statisticText is " at p99" for a p99 gate, "" for the median's.
func (g GateResult) statisticText() string {
	if g.Statistic == "p99" {
		return " at p99"
	}
	return ""
}

// Failure says why the case failed the gate.
func (g GateResult) Failure() string {
	return fmt.Sprintf("%s: AllReduce busbw%s %s GB/s < min_busbw_gbps %s", g.Name(), g.statisticText(), gbps(g.BusBWGBps()), gbps(g.MinGBps))
}

// Held says the case met the gate: "1 MiB ... 40.33 GB/s at p99 >= 40.00".
func (g GateResult) Held() string {
	return fmt.Sprintf("%.2f GB/s%s >= %.2f", g.BusBWGBps(), g.statisticText(), g.MinGBps)
}

// Gates are the gates of every run with a min_busbw_gbps (by run): each
// direct AllReduce case at the run's largest size.
func Gates(stats []TimingStat, gates map[string]Gate) []GateResult {
	largest := map[string]int64{}
	for _, s := range stats {
		largest[s.Run] = max(largest[s.Run], s.SizeBytes)
	}
	var out []GateResult
	for _, s := range stats {
		g := gates[s.Run]
		if g.MinGBps <= 0 || s.Mode != coll.Direct || s.SizeBytes != largest[s.Run] {
			continue
		}
		out = append(out, GateResult{Run: s.Run, Gate: g, Stat: s})
	}
	return out
}

// MemoryTable shows each mode's deltas next to the analytic values, in
// binary units (BytesText). Where ranks differ, the range over ranks is
// shown.
func MemoryTable(w io.Writer, modes []SummaryMemory) error {
	fmt.Fprintln(w, "Memory (above the baseline; x = multiples of the payload, steady / peak)")
	device := slices.ContainsFunc(modes, func(m SummaryMemory) bool {
		return len(m.Ranks) > 0 && m.Ranks[0].DeviceSteadyDeltaBytes != nil
	})
	header := []string{"mode", "steady", "peak", "x", "analytic steady / peak", "match"}
	if device {
		header = append(header, "device steady / peak")
	}
	t := newTable(w, append(header, "checked")...)
	for _, m := range modes {
		if len(m.Ranks) == 0 {
			continue
		}
		field := func(f func(SummaryMemoryRank) int64) []int64 {
			v := make([]int64, len(m.Ranks))
			for i, r := range m.Ranks {
				v[i] = f(r)
			}
			return v
		}
		steady := field(func(r SummaryMemoryRank) int64 { return r.SteadyDeltaBytes })
		peak := field(func(r SummaryMemoryRank) int64 { return r.PeakDeltaBytes })
		payload := float64(m.PayloadBytes)
		row := []string{m.Mode, rangeText(steady), rangeText(peak),
			fmt.Sprintf("%.3g / %.3g", float64(slices.Max(steady))/payload, float64(slices.Max(peak))/payload),
			BytesText(m.AnalyticSteadyBytes) + " / " + BytesText(m.AnalyticPeakBytes), yesNo(m.MatchesAnalytic)}
		if device {
			cell := "n/a"
			if m.Ranks[0].DeviceSteadyDeltaBytes != nil {
				cell = rangeText(field(func(r SummaryMemoryRank) int64 { return deref(r.DeviceSteadyDeltaBytes) })) + " / " +
					rangeText(field(func(r SummaryMemoryRank) int64 { return deref(r.DevicePeakDeltaBytes) }))
			}
			row = append(row, cell)
		}
		t.Append(append(row, yesNo(m.Correct)))
	}
	return t.Render()
}

func deref(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// ClosingLine is the seed's last line, counted on rank 0.
func ClosingLine(rows Rows) string {
	return fmt.Sprintf("contracts_per_rank=%d timings_per_rank=%d memory_modes_per_rank=%d",
		len(rows.Contracts), len(rows.Timings), len(rows.Memory))
}

// SizeText writes a byte count as 1K, 64K, 256M.
func SizeText(b int64) string { return coll.SizeText(b) }

func rangeText(v []int64) string {
	lo, hi := slices.Min(v), slices.Max(v)
	if lo == hi {
		return BytesText(lo)
	}
	return BytesText(lo) + ".." + BytesText(hi)
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

// gbps writes a bandwidth to two decimals, or to three significant digits
// below 0.01 GB/s, where two decimals would say a gate of 0.002 is 0.00.
func gbps(v float64) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return fmt.Sprintf("%.3g", v)
	}
	return fmt.Sprintf("%.2f", v)
}

package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"rsag/coll"
)

// SuspectNode is the kind of a suspect that is a whole node; the others
// are links and ranks.
const SuspectNode = "node"

// LocateFile is rank 0's file of every locate measurement of every rank.
const LocateFile = "locate.csv"

// LocateRow is one locate measurement on one rank:
//
//	locate.csv: rank,step,round,repeat,unit,a,b,probe,collective,size_bytes,bytes,ranks,duration_us,host
//
// a and b are the unit's members: node indices (in the order of the Nodes
// table) for the inside and pairs steps, world ranks for rank pairs.
type LocateRow struct {
	Rank       int     `csv:"rank"`
	Step       string  `csv:"step"`
	Round      int     `csv:"round"`
	Repeat     int     `csv:"repeat"`
	Unit       string  `csv:"unit"`
	A          int     `csv:"a"`
	B          int     `csv:"b"`
	Probe      int     `csv:"probe"`
	Collective string  `csv:"collective"`
	SizeBytes  int64   `csv:"size_bytes"`
	Bytes      int64   `csv:"bytes"`
	Ranks      int     `csv:"ranks"`
	DurationUS float64 `csv:"duration_us"`
	Host       string  `csv:"host"`
}

// LocateCommRow is one round's sub-communicator on one rank: its split
// and its free, in microseconds (Member false: the rank sat it out).
type LocateCommRow struct {
	Rank    int
	Step    string
	Round   int
	Member  bool
	SplitUS float64
	FreeUS  float64
}

// LocateRankRow is how long the phase took on one rank.
type LocateRankRow struct {
	Rank    int
	Seconds float64
	WaitedS float64 // runnable but not running, during the phase
}

// locate.csv registers itself: rank 0's, from every rank's rows.
func init() {
	Register(Output{Stage: Combined, Patterns: []string{LocateFile}, Plan: func(in Input) ([]string, func(string) error) {
		if !in.Ran.Has(Locate) {
			return nil, nil
		}
		return []string{LocateFile}, func(dir string) error {
			return writeFile(filepath.Join(dir, LocateFile), func(b *bytes.Buffer) error { return WriteCSV(b, in.Rows.Locate, AllColumns, true) })
		}
	}})
}

// SummaryLocate is summary.json's locate section: what ran, every node's
// and pair's figures, and the suspects. A figure is a unit's bus bandwidth
// over the median of the same probe (collective and size) in the same
// repeat, the median over repeats (see package locate).
type SummaryLocate struct {
	Threshold float64                `json:"threshold"`
	Repeats   int                    `json:"repeats"`
	Seconds   float64                `json:"seconds"` // the phase, on its slowest rank
	Probes    []SummaryLocateProbe   `json:"probes"`
	Steps     []SummaryLocateStep    `json:"steps"`
	Suspects  []SummaryLocateSuspect `json:"suspects"`
	// Intermittent are the units slow beyond the spread in some repeats
	// but not all (a flapping link, a throttled node): kept apart from
	// the suspects, which are slow in every one.
	Intermittent []SummaryLocateSuspect `json:"intermittent"`
	// Verdict is the phase's in a word: "suspects", "intermittent",
	// "healthy", or "inconclusive" when no suspect was found but some
	// step could not judge (its steps[].inconclusive says why).
	Verdict   string              `json:"verdict"`
	Nodes     []SummaryLocateNode `json:"nodes"`
	Pairs     []SummaryLocatePair `json:"pairs"`      // of nodes: the matrix
	RankPairs []SummaryLocatePair `json:"rank_pairs"` // of ranks within a node
}

// SummaryLocateProbe is one measurement every unit took.
type SummaryLocateProbe struct {
	Collective string `json:"collective"`
	SizeBytes  int64  `json:"size_bytes"`
	Bound      string `json:"bound"` // "latency" or "bandwidth": what the size is bound by
}

// SummaryLocateStep is one step: whether it ran (and why not), its
// schedule, and what its sub-communicators cost.
type SummaryLocateStep struct {
	Name     string `json:"name"`
	Title    string `json:"title"`
	Ran      bool   `json:"ran"`
	Note     string `json:"note"` // why it did not run, or what it cannot tell
	Schedule string `json:"schedule"`
	Strides  []int  `json:"strides"`
	Rounds   int    `json:"rounds"`
	Units    int    `json:"units"`
	// SplitUS and FreeUS are the median over rounds of the slowest
	// rank's split and free of the round's sub-communicator.
	SplitUS float64 `json:"split_us"`
	FreeUS  float64 `json:"free_us"`
	// Spread is the widest spread of the step's healthy units about the
	// median over its probes, a factor (1.3: within 1.3x); Inconclusive
	// says why the step cannot call its units healthy ("" when it can):
	// too few units or repeats, or a spread wider than the threshold.
	Spread       float64 `json:"spread"`
	Inconclusive string  `json:"inconclusive"`
}

// SummaryLocateFigure is a unit at one probe.
type SummaryLocateFigure struct {
	Probe           int     `json:"probe"`
	Figure          float64 `json:"figure"`
	BusBWGBps       float64 `json:"busbw_gbps"`
	MedianBusBWGBps float64 `json:"median_busbw_gbps"`
	SlowRepeats     int     `json:"slow_repeats"`
	Dips            int     `json:"dips"`    // repeats slow beyond the spread of single measurements
	Repeats         int     `json:"repeats"` // with a measurement
	Suspect         bool    `json:"suspect"`
	Intermittent    bool    `json:"intermittent"`
}

// SummaryLocateNode is one node: its inside figures, its median pair
// figures (its k-th slowest pair's, k most of its partners and all of up
// to three), and the verdict.
type SummaryLocateNode struct {
	Host         string                `json:"host"`
	Ranks        []int                 `json:"ranks"`
	Inside       []SummaryLocateFigure `json:"inside"`
	Pairs        []SummaryLocateFigure `json:"pairs"`
	Suspect      bool                  `json:"suspect"`
	Intermittent bool                  `json:"intermittent"`
	Verdict      string                `json:"verdict"`
}

// SummaryLocatePair is one pair of nodes (or of ranks within a node)
// against the median of the pairs between members that are no suspects.
type SummaryLocatePair struct {
	Nodes        []string              `json:"nodes"`
	Ranks        []int                 `json:"ranks"` // a rank pair's; empty for nodes
	Round        int                   `json:"round"`
	Figures      []SummaryLocateFigure `json:"figures"`
	Suspect      bool                  `json:"suspect"`
	Intermittent bool                  `json:"intermittent"`
	Verdict      string                `json:"verdict"` // as a node's
}

// SummaryLocateSuspect is one suspect, as a banner or a health check reads
// it: what it is, where, what kind of problem, and its figure.
type SummaryLocateSuspect struct {
	Kind    string   `json:"kind"` // node, link, rank, rank-link
	Nodes   []string `json:"nodes"`
	Ranks   []int    `json:"ranks"`
	Problem string   `json:"problem"` // latency or bandwidth
	By      []string `json:"by"`      // the steps that named it
	// The probe that names it: its figure, bus bandwidth and the median's.
	Collective      string  `json:"collective"`
	SizeBytes       int64   `json:"size_bytes"`
	Figure          float64 `json:"figure"`
	BusBWGBps       float64 `json:"busbw_gbps"`
	MedianBusBWGBps float64 `json:"median_busbw_gbps"`
	// SlowRepeats of Repeats: the repeats it was slow in (for an
	// intermittent unit: beyond the spread of single measurements).
	SlowRepeats int    `json:"slow_repeats"`
	Repeats     int    `json:"repeats"`
	Text        string `json:"text"` // "node3 (bandwidth 0.31x median)", "node7 slow in 4 of 9 repeats, bandwidth"
}

// FigureText writes a figure with two significant digits below 0.1
// (0.0042x: fifty times a difference that 0.00x would hide), else two
// decimals.
func FigureText(f float64) string {
	if f < 0.1 {
		return fmt.Sprintf("%.2gx", f)
	}
	return fmt.Sprintf("%.2fx", f)
}

// SuspectText is how a suspect reads in one line: "node3 (bandwidth 0.31x
// median)", "node1-node2 (link, bandwidth 0.12x median)", "rank 5 on
// node2 (latency 0.40x median)"; an intermittent one "node7 slow in 4 of 9
// repeats, bandwidth", "node1-node2 (link) slow in 4 of 9 repeats,
// bandwidth".
func SuspectText(s SummaryLocateSuspect, intermittent bool) string {
	// who is the suspect; kind its kind where the name does not say it.
	who, kind := s.Nodes[0], ""
	switch {
	case len(s.Ranks) == 2:
		who, kind = fmt.Sprintf("ranks %d-%d on %s", s.Ranks[0], s.Ranks[1], s.Nodes[0]), s.Kind
	case len(s.Ranks) == 1:
		who = fmt.Sprintf("rank %d on %s", s.Ranks[0], s.Nodes[0])
	case len(s.Nodes) == 2:
		who, kind = strings.Join(s.Nodes, "-"), s.Kind
	}
	if intermittent {
		what := fmt.Sprintf("slow in %d of %d repeats, %s", s.SlowRepeats, s.Repeats, s.Problem)
		if kind != "" {
			return fmt.Sprintf("%s (%s) %s", who, kind, what)
		}
		return who + " " + what
	}
	if kind != "" {
		return fmt.Sprintf("%s (%s, %s)", who, kind, s.FigureText())
	}
	return fmt.Sprintf("%s (%s)", who, s.FigureText())
}

// LocateTable prints the Locate table: what each step ran (or why not),
// every node with its inside figure and its median pair figure, each the
// probe where it is lowest against the median, and its verdict; then
// every suspect link and rank.
func LocateTable(w io.Writer, l SummaryLocate) error {
	fmt.Fprintf(w, "Locate (bus bandwidth / the median of the same collective and size; a suspect is below %.2fx in all %d repeats, beyond the healthy spread; took %.1f s)\n",
		l.Threshold, l.Repeats, l.Seconds)
	for _, s := range l.Steps {
		line := fmt.Sprintf("  %s: ", s.Title)
		switch {
		case !s.Ran:
			line += "not run: " + s.Note
		default:
			line += fmt.Sprintf("%d unit(s) in %d round(s)", s.Units, s.Rounds)
			if s.Schedule != "" {
				line += ", schedule " + s.Schedule
				if len(s.Strides) > 0 {
					line += fmt.Sprintf(" (strides %v)", s.Strides)
				}
			}
			line += fmt.Sprintf("; sub-communicators split in %s, freed in %s (median round, slowest rank)", usText(s.SplitUS), usText(s.FreeUS))
			if s.Note != "" {
				line += "; " + s.Note
			}
		}
		fmt.Fprintln(w, line)
		if s.Ran && s.Inconclusive != "" {
			fmt.Fprintf(w, "    inconclusive: %s\n", s.Inconclusive)
		}
	}
	t := newTable(w, "node", "ranks", "inside (lowest)", "pairs (lowest)", "verdict")
	for _, n := range l.Nodes {
		t.Append([]string{n.Host, listText(n.Ranks), lowest(n.Inside, l.Probes), lowest(n.Pairs, l.Probes), n.Verdict})
	}
	if err := t.Render(); err != nil {
		return err
	}
	if len(l.RankPairs) > 0 {
		if err := rankPairsTable(w, l); err != nil {
			return err
		}
	}
	var others []SummaryLocateSuspect
	for _, s := range append(slices.Clone(l.Intermittent), l.Suspects...) {
		if s.Kind != SuspectNode {
			others = append(others, s)
		}
	}
	if len(others) > 0 {
		fmt.Fprintln(w, "Suspect links and ranks")
		t := newTable(w, "suspect", "kind", "problem", "figure", "busbw GB/s", "median GB/s", "at")
		for _, s := range others {
			where := strings.Join(s.Nodes, "-")
			if len(s.Ranks) > 0 {
				where = fmt.Sprintf("%s ranks %s", s.Nodes[0], listText(s.Ranks))
			}
			t.Append([]string{where, s.Kind, s.Problem, FigureText(s.Figure), fmt.Sprintf("%.3g", s.BusBWGBps),
				fmt.Sprintf("%.3g", s.MedianBusBWGBps), ProbeText(SummaryLocateProbe{Collective: s.Collective, SizeBytes: s.SizeBytes})})
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	return nil
}

// shownRankPairs bounds the rank pairs the terminal lists, lowest first;
// summary.json has them all.
const shownRankPairs = 12

// rankPairsTable lists the rank pairs within nodes that were measured,
// lowest figure first, with their verdicts: on one node, what it can tell.
func rankPairsTable(w io.Writer, l SummaryLocate) error {
	pairs := slices.Clone(l.RankPairs)
	low := func(p SummaryLocatePair) float64 {
		m := math.Inf(1)
		for _, f := range p.Figures {
			m = math.Min(m, f.Figure)
		}
		return m
	}
	slices.SortStableFunc(pairs, func(a, b SummaryLocatePair) int { return cmp.Compare(low(a), low(b)) })
	title := fmt.Sprintf("Rank pairs within nodes (%d, lowest first)", len(pairs))
	if len(pairs) > shownRankPairs {
		title = fmt.Sprintf("Rank pairs within nodes (the lowest %d of %d; summary.json has them all)", shownRankPairs, len(pairs))
		pairs = pairs[:shownRankPairs]
	}
	fmt.Fprintln(w, title)
	t := newTable(w, "node", "ranks", "lowest", "verdict")
	for _, p := range pairs {
		t.Append([]string{p.Nodes[0], listText(p.Ranks), lowest(p.Figures, l.Probes), p.Verdict})
	}
	return t.Render()
}

func usText(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f us", us)
}

// lowest is a unit's lowest figure and where: "0.31x AllReduce 1M"; "-"
// when it was not measured.
func lowest(figs []SummaryLocateFigure, probes []SummaryLocateProbe) string {
	if len(figs) == 0 {
		return "-"
	}
	i := slices.IndexFunc(figs, func(f SummaryLocateFigure) bool { return f.Suspect })
	if i < 0 {
		i = 0
		for j, f := range figs {
			if f.Figure < figs[i].Figure {
				i = j
			}
		}
	} else {
		for j, f := range figs {
			if f.Suspect && f.Figure < figs[i].Figure {
				i = j
			}
		}
	}
	return FigureText(figs[i].Figure) + " " + ProbeText(probes[figs[i].Probe])
}

func ProbeText(p SummaryLocateProbe) string {
	for _, c := range coll.Collectives {
		if c.Name == p.Collective {
			return c.Label + " " + SizeText(p.SizeBytes)
		}
	}
	return p.Collective + " " + SizeText(p.SizeBytes)
}

// LocateLine is the phase's closing lines: "locate: no suspect among 4
// nodes", or "suspects: node3 (bandwidth 0.31x median)", which under Slurm
// ends with the sbatch option that leaves the suspects' nodes out, for the
// operator to paste into the next submission (a link's two nodes: leaving
// either out avoids it; a rank's node); then the intermittent units,
// "intermittent: node7 slow in 4 of 9 repeats, bandwidth"; then, when no
// suspect was found, what could not be judged, and on one node what one
// node cannot tell.
func LocateLine(l SummaryLocate, slurm bool) string {
	var lines []string
	switch {
	case len(l.Suspects) > 0:
		var texts, nodes []string
		for _, s := range l.Suspects {
			texts = append(texts, s.Text)
			for _, n := range s.Nodes {
				if !slices.Contains(nodes, n) {
					nodes = append(nodes, n)
				}
			}
		}
		line := "suspects: " + strings.Join(texts, ", ")
		if slurm {
			line += ": sbatch --exclude=" + strings.Join(nodes, ",") + " ..."
		}
		lines = append(lines, line)
	case len(l.Nodes) == 1:
		lines = append(lines, "locate: no suspect on the one node")
	default:
		lines = append(lines, fmt.Sprintf("locate: no suspect among %d nodes", len(l.Nodes)))
	}
	var unjudged []string // nodes a step judged, but could not call healthy: within the noise
	for _, n := range l.Nodes {
		if strings.HasPrefix(n.Verdict, "inconclusive") && !n.Suspect {
			unjudged = append(unjudged, n.Host+" ("+n.Verdict+")")
		}
	}
	switch {
	case len(l.Suspects) > 0:
	case l.Verdict == "inconclusive":
		// No suspect is not healthy when a step could not judge.
		lines[0] += ", but inconclusive: a step could not judge its units (below), so no node is called healthy either"
	case len(unjudged) > 0:
		lines[0] += ", but not every node is called healthy (below)"
	}
	if len(unjudged) > 0 && len(l.Suspects) == 0 && l.Verdict != "inconclusive" {
		lines = append(lines, "locate: not called healthy: "+strings.Join(unjudged, ", "))
	}
	if len(l.Intermittent) > 0 {
		lines = append(lines, "intermittent: "+strings.Join(IntermittentTexts(&l), ", "))
	}
	if len(l.Suspects) == 0 {
		if len(l.Nodes) == 1 {
			lines = append(lines, "locate: one node can tell only its ranks from each other: the node itself and the links "+
				"between nodes need other nodes to compare with")
		}
		for _, s := range l.Steps {
			if s.Ran && s.Inconclusive != "" {
				lines = append(lines, fmt.Sprintf("locate: %s: inconclusive: %s", s.Title, s.Inconclusive))
			}
		}
	}
	return strings.Join(lines, "\n")
}

// IntermittentTexts are the intermittent units in one line each, for
// run.json.
func IntermittentTexts(l *SummaryLocate) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, s := range l.Intermittent {
		out = append(out, s.Text)
	}
	return out
}

// SuspectTexts are the suspects in one line each, for run.json.
func SuspectTexts(l *SummaryLocate) []string {
	if l == nil {
		return nil
	}
	var out []string
	for _, s := range l.Suspects {
		out = append(out, s.Text)
	}
	return out
}

// normalizedLocate replaces nil lists with empty ones.
func normalizedLocate(l SummaryLocate) SummaryLocate {
	orEmpty := func(f []SummaryLocateFigure) []SummaryLocateFigure {
		if f == nil {
			return []SummaryLocateFigure{}
		}
		return f
	}
	ints := func(v []int) []int {
		if v == nil {
			return []int{}
		}
		return v
	}
	if l.Probes == nil {
		l.Probes = []SummaryLocateProbe{}
	}
	if l.Steps == nil {
		l.Steps = []SummaryLocateStep{}
	}
	for i := range l.Steps {
		l.Steps[i].Strides = ints(l.Steps[i].Strides)
	}
	for _, ss := range []*[]SummaryLocateSuspect{&l.Suspects, &l.Intermittent} {
		if *ss == nil {
			*ss = []SummaryLocateSuspect{}
		}
		for i := range *ss {
			(*ss)[i].Ranks = ints((*ss)[i].Ranks)
			if (*ss)[i].By == nil {
				(*ss)[i].By = []string{}
			}
		}
	}
	if l.Nodes == nil {
		l.Nodes = []SummaryLocateNode{}
	}
	for i := range l.Nodes {
		l.Nodes[i].Ranks = ints(l.Nodes[i].Ranks)
		l.Nodes[i].Inside, l.Nodes[i].Pairs = orEmpty(l.Nodes[i].Inside), orEmpty(l.Nodes[i].Pairs)
	}
	for _, ps := range []*[]SummaryLocatePair{&l.Pairs, &l.RankPairs} {
		if *ps == nil {
			*ps = []SummaryLocatePair{}
		}
		for i := range *ps {
			(*ps)[i].Ranks = ints((*ps)[i].Ranks)
			(*ps)[i].Figures = orEmpty((*ps)[i].Figures)
		}
	}
	return l
}

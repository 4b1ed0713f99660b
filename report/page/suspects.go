// The page's sections that name a culprit: the soak's wrong outputs, the
// locate phase's verdict, and each node's figures.

package page

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"rsag/report"
	"rsag/report/plot"
)

// soakSection is the soak: what it ran, and every wrong output it found,
// the first wrong element of each.
func soakSection(k report.SummarySoak) section {
	sec := section{ID: "soak", Title: "Soak",
		How: "Iteration after iteration, a case drawn from the seed: AllReduce and ReduceScatter + AllGather (and the hierarchical form " +
			"with groups) on the same exactly checkable input, every element of every step's output checked. Chunk q is the part rank q " +
			"holds after ReduceScatter: one rank wrong in the chunk it reduced is a reduction fault on it; every rank wrong in one chunk " +
			"after AllGather is a transfer from that chunk's owner."}
	notDrawn := "none"
	if len(k.NotDrawn) > 0 {
		notDrawn = strings.Join(k.NotDrawn, ", ")
	}
	runs := &table{Head: heads("seed", "iterations", "failed", "failure rate", "bytes moved (rank 0)", "seconds", "not drawn at this width"),
		Rows: []row{{Cells: []cell{plain(fmt.Sprint(k.Seed)), num("%.0f", float64(k.Iterations)), num("%.0f", float64(k.FailedIterations)),
			num("%.3g", k.FailureRate), bytesCell(k.BytesMoved), num("%.1f", k.ElapsedS), plain(notDrawn)}}}}
	sec.Blocks = []block{{Table: runs}}
	if len(k.Faults) == 0 {
		return sec
	}
	faults := &table{Sortable: true, Caption: "every wrong output, in iteration, mode, step and rank order",
		Head: heads("iteration", "rank", "host", "mode", "step", "wrong / elements", "chunks", "first element", "expected", "got")}
	for _, f := range k.Faults {
		faults.Rows = append(faults.Rows, row{Class: "bad", Cells: []cell{num("%.0f", float64(f.Iteration)), num("%.0f", float64(f.Rank)),
			plain(f.Host), plain(text(f.Mode)), plain(f.Collective), plain(fmt.Sprintf("%d / %d", f.Wrong, f.Elements)), plain(listText(f.Chunks)),
			num("%.0f", float64(f.Index)), plain(valueBits(f.Expected, f.ExpectedBits)), plain(valueBits(f.Got, f.GotBits))}})
	}
	sec.Blocks = append(sec.Blocks, block{Table: faults})
	return sec
}

// valueBits is an element's value in full, not in an exponent (the soak's
// values are integers or exact sums), and its bits: "837648698 (0x31ed813a)".
func valueBits(v float64, bits string) string {
	return strconv.FormatFloat(v, 'f', -1, 64) + " (" + bits + ")"
}

// locateSection is the locate phase: every node's verdict, and the pair
// matrix.
func locateSection(l report.SummaryLocate, figs map[string][]plot.Inline) section {
	sec := section{ID: "locate", Title: "Locate",
		How: fmt.Sprintf("Each unit (a node inside, a pair of nodes, a pair of ranks of a node) on its own sub-communicator; its figure is its "+
			"bus bandwidth over the median of its step's units at the same collective and size. A suspect is below %.2gx in all %d repeats "+
			"and beyond the healthy units' spread; a node slow with most of its partners is the node's fault, a pair slow while neither node "+
			"is, the link's (docs/locate.md).", l.Threshold, l.Repeats)}
	nodes := &table{Sortable: true, Caption: plural(len(l.Nodes), "node", "nodes"), Head: heads("host", "ranks", "verdict")}
	for _, n := range l.Nodes {
		r := row{Cells: []cell{plain(n.Host), plain(listText(n.Ranks)), plain(n.Verdict)}}
		if n.Suspect {
			r.Class = "bad"
		}
		nodes.Rows = append(nodes.Rows, r)
	}
	sec.Blocks = []block{{Table: nodes}}
	if len(l.RankPairs) > 0 {
		ranks := &table{Sortable: true, Caption: plural(len(l.RankPairs), "rank pair", "rank pairs") + " within nodes",
			Head: heads("host", "ranks", "figures", "verdict")}
		for _, p := range l.RankPairs {
			var figs []string
			for _, f := range p.Figures {
				figs = append(figs, fmt.Sprintf("%.3g", f.Figure))
			}
			r := row{Cells: []cell{plain(p.Nodes[0]), plain(listText(p.Ranks)), plain(strings.Join(figs, " ")), plain(p.Verdict)}}
			if p.Suspect {
				r.Class = "bad"
			}
			ranks.Rows = append(ranks.Rows, r)
		}
		sec.Blocks = append(sec.Blocks, block{Table: ranks})
	}
	for _, f := range figs[plot.LocatePairs] {
		sec.Blocks = append(sec.Blocks, figureBlock(f))
	}
	return sec
}

func nodesSection(s report.Summary) section {
	sec := section{ID: "nodes", Title: "Nodes",
		How: "Where each rank ran: its host, its rank among the ranks of that host (on GPU nodes, its GPU) and its device."}
	if len(s.Ranks) == 0 {
		sec.Empty = "No ranks recorded."
		return sec
	}
	grouped := slices.ContainsFunc(s.Nodes, func(n report.SummaryNode) bool { return len(n.Groups) > 0 })
	nodes := &table{Sortable: true, Caption: plural(len(s.Nodes), "node", "nodes"), Head: heads("host", "ranks", "local ranks", "device")}
	if grouped {
		nodes.Head = append(nodes.Head, headCell{Text: "hierarchy groups"})
	}
	for _, n := range s.Nodes {
		r := row{Cells: []cell{plain(n.Host), {Text: listText(n.Ranks), Sort: fmt.Sprint(n.Ranks[0]), Class: "n"},
			{Text: listText(n.LocalRanks), Class: "n"}, plain(n.Device)}}
		if grouped {
			var g []string
			for _, x := range n.Groups {
				g = append(g, fmt.Sprint(x))
			}
			r.Cells = append(r.Cells, cell{Text: strings.Join(g, ","), Class: "n"})
		}
		nodes.Rows = append(nodes.Rows, r)
	}
	ranks := &table{Sortable: true, Caption: plural(len(s.Ranks), "rank", "ranks"), Head: heads("rank", "host", "local rank", "device", "bus id")}
	for _, r := range s.Ranks {
		ranks.Rows = append(ranks.Rows, row{Cells: []cell{{Text: fmt.Sprint(r.Rank), Sort: fmt.Sprint(r.Rank), Class: "n"}, plain(r.Host),
			{Text: fmt.Sprint(r.LocalRank), Sort: fmt.Sprint(r.LocalRank), Class: "n"}, plain(r.Device), plain(orDash(r.BusID))}})
	}
	sec.Blocks = []block{{Table: nodes}, {Table: ranks}}
	if len(s.Ranks) > report.FoldRanksAbove {
		// A row a rank would be thousands: the nodes' rows say it.
		nodes.Caption = fmt.Sprintf("%s; %s, one row a node (above %d ranks the rank rows fold)", nodes.Caption,
			plural(len(s.Ranks), "rank", "ranks"), report.FoldRanksAbove)
		sec.Blocks = []block{{Table: nodes}}
	}
	return sec
}

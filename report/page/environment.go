// The page's last sections: the fastest of NCCL's fast paths against plain
// buffers, and the environment and config the run had.

package page

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"rsag/coll"
	"rsag/report"
)

// fastestSection names, for each size and mode of a sweep over NCCL's
// fast paths, the configuration with the lowest median against the best
// plain buffers on a default communicator (report.FastestTable's rows).
func fastestSection(s report.Summary) section {
	sec := section{ID: "fastest", Title: "Fastest configuration",
		How: "Per size and mode, the buffers, CTA policy and method with the lowest median, and how much faster it is than the best plain " +
			"buffers on a default communicator: what registration, symmetric windows or the CTA policy buy."}
	if len(s.Timing) == 0 {
		sec.Empty = absent(s, "timing")
		return sec
	}
	rows := report.Fastest(s.Timing)
	if rows == nil {
		sec.Empty = "Every case ran plain buffers on a default communicator: nothing to compare. Sweep buffers or cta_policies (NCCL) to see what they buy."
		return sec
	}
	tb := &table{Sortable: true, Head: heads("run", "dtype", "op", "placement", "size", "mode", "fastest", "median µs", "plain/default", "median µs", "gain")}
	for _, b := range rows {
		g := b.Problem
		base, baseUS, gain := plain("-"), plain("-"), plain("-")
		if b.HaveBaseline {
			base, baseUS = plain(coll.MethodText(b.Baseline.Method, b.Baseline.Batch)), num("%.2f", b.Baseline.MedianUS)
			if b.Fastest.MedianUS > 0 {
				gain = num("%.2fx", b.Baseline.MedianUS/b.Fastest.MedianUS)
			}
		}
		tb.Rows = append(tb.Rows, row{Cells: []cell{plain(g.Run), plain(text(g.DType)), plain(text(g.Op)), plain(text(g.Placement)), size(g.SizeBytes), plain(text(g.Mode)),
			plain(orDash(coll.VariantText(b.Fastest.Buffers, b.Fastest.CTAPolicy)) + " " + coll.MethodText(b.Fastest.Method, b.Fastest.Batch)), num("%.2f", b.Fastest.MedianUS),
			base, baseUS, gain}})
	}
	sec.Blocks = []block{{Table: tb}}
	return sec
}

func environmentSection(s report.Summary) section {
	sec := section{ID: "environment", Title: "Environment",
		How: "What ran, where, with which libraries and settings: enough to run it again, and to tell two runs apart."}
	kv := &table{Head: heads("what", "value")}
	add := func(k, v string) { kv.Rows = append(kv.Rows, row{Cells: []cell{plain(k), wrap(v)}}) }
	add("rsag", fmt.Sprintf("%s (commit %s)", s.RSAG.Version, s.RSAG.Commit))
	add("summary.json", fmt.Sprintf("schema_version %d", s.SchemaVersion))
	add("status", s.Status+orEmpty(": ", s.Reason))
	add("started, ended", s.Started+", "+s.Ended)
	add("backend", s.Backend)
	add("world size", fmt.Sprint(s.WorldSize))
	add("MPI library", orDash(s.MPILibrary))
	for _, l := range s.Libraries {
		if l.Version != s.MPILibrary { // the MPI backend's library is the MPI library
			add("library "+l.Name, l.Version+orEmpty(" at ", l.Path))
		}
	}
	add("CUDA driver", orDash(s.Driver))
	var devices []string
	for _, d := range unique(s.Ranks, func(r report.SummaryRank) string { return r.Device }) {
		n := 0
		for _, r := range s.Ranks {
			if r.Device == d {
				n++
			}
		}
		devices = append(devices, fmt.Sprintf("%d x %s", n, d))
	}
	add("devices", orDash(strings.Join(devices, ", ")))
	if s.GPUShared != "" {
		add("GPU sharing", s.GPUShared)
	}
	if len(s.Command) > 0 {
		add("command line (rank 0)", strings.Join(s.Command, " "))
	}
	env := &table{Sortable: true, Caption: "NCCL_* and UCX_* variables rank 0 saw", Head: heads("variable", "value")}
	keys := make([]string, 0, len(s.Environment))
	for k := range s.Environment {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env.Rows = append(env.Rows, row{Cells: []cell{plain(k), wrap(s.Environment[k])}})
	}
	sec.Blocks = []block{{Table: kv}}
	if len(keys) > 0 {
		sec.Blocks = append(sec.Blocks, block{Table: env})
	} else {
		sec.Blocks = append(sec.Blocks, block{Notes: []string{"No NCCL_* or UCX_* variable was set on rank 0."}})
	}
	cfg, err := json.MarshalIndent(s.Config, "", "  ")
	if err != nil {
		cfg = []byte(err.Error())
	}
	sec.Blocks = append(sec.Blocks, block{Heading: "Config (resolved, after -set and -backend)", Pre: string(cfg)})
	return sec
}

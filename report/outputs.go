package report

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Stage is when in a run an output is written.
type Stage int

const (
	// EachRank outputs are written by every rank, of its own rows, once
	// its phases are done (the seed's per-rank CSVs).
	EachRank Stage = iota
	// Combined outputs are written by rank 0 from every rank's rows.
	Combined
	// Final outputs are written by rank 0 from the summary, once the run's
	// status is known.
	Final
	// Last outputs are written by rank 0 after every other, in the step
	// that makes run.json say how the run ended: summary.json and the page,
	// which state that status, so that neither exists before what it
	// vouches for, nor outlives a run.json that says otherwise.
	Last
)

// Input is what an output is written from.
type Input struct {
	Rank, World int
	Ran         Phases
	// Rows are this rank's for EachRank, every rank's (Merge) for Combined.
	Rows Rows
	// Summary is the run's, for Final; nil before there is one (when a
	// run lists the files it will write, at its start).
	Summary *Summary
	// Runs are the config's timing runs' names, in order, for outputs
	// whose names follow from them (the figures): with Summary nil, such
	// an output plans every name it may write for them (MayWrite); nil
	// when a run lists the files it will write.
	Runs []string
	// Nodes is the node of every rank, by rank, numbered from 0 in the
	// order of their first ranks (NodesOf), for outputs written one a
	// node; nil where it is not known: each rank its own, which names
	// every file such an output may write.
	Nodes []int
	// Gates are the bus-bandwidth gates (the config's min_busbw_gbps) of
	// the final outputs, judged on Summary's timing; nil without one.
	Gates []GateResult
	// MetricsDir is a directory the operator names (the config's
	// metrics_dir, node_exporter's textfile directory) where rsag.prom is
	// written too; "" for none.
	MetricsDir string
}

// Node is the input rank's node (Nodes).
func (in Input) Node() int {
	if in.Rank < len(in.Nodes) {
		return in.Nodes[in.Rank]
	}
	return in.Rank
}

// NodesOf numbers the nodes of ranks on hosts (by rank) from 0 in the
// order of their first ranks: Input's Nodes.
func NodesOf(hosts []string) []int {
	index := map[string]int{}
	nodes := make([]int, len(hosts))
	for r, h := range hosts {
		if _, ok := index[h]; !ok {
			index[h] = len(index)
		}
		nodes[r] = index[h]
	}
	return nodes
}

// Output is one kind of file a run writes into its output directory, or a
// family of them (one per rank, per sweep). Each output registers itself
// (Register, from its file's init), and the one list of them yields the
// files a run lists in run.json before it writes them, what -overwrite may
// recognise as rsag's, and the writing itself: nothing else names a file.
type Output struct {
	Stage Stage
	// Patterns match, as path.Match does, every base name the output may
	// write in any run.
	Patterns []string
	// Plan returns the files the output writes for in (none when what it
	// shows did not run), and how to write them into a directory: building
	// an output (a figure) is done once, for both.
	Plan func(in Input) (files []string, write func(dir string) error)
	// Ended, for a Last output, says it is written too when a run is
	// ended early (Summary.EndedEarly: end_on_stuck_rank, the watchdog, a
	// signal), from the summary of what rank 0 knew then (PlanEnded): the
	// files a CI system or Prometheus reads, so that they say why rather
	// than keep the previous run's word.
	Ended bool
}

var outputs []Output

// Register adds an output to the list; it is called from init.
func Register(o Output) {
	for _, p := range o.Patterns {
		if _, err := path.Match(p, ""); err != nil {
			panic(fmt.Sprintf("report: output pattern %q: %v", p, err))
		}
	}
	outputs = append(outputs, o)
}

// IsOutput reports whether name (a base name, or one in a folder of
// rsag's: ranks/rank3_timings.csv) is one that some output may write: a
// file with such a name is rsag's. A name ending in a slash ("ranks/")
// asks about a folder (IsOutputFolder).
func IsOutput(name string) bool {
	if folder, ok := strings.CutSuffix(name, "/"); ok {
		return IsOutputFolder(folder)
	}
	for _, o := range outputs {
		for _, p := range o.Patterns {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
	}
	return false
}

// IsOutputFolder reports whether name (a base name) is a folder that some
// output writes its files in (RankFolder).
func IsOutputFolder(name string) bool {
	for _, o := range outputs {
		for _, p := range o.Patterns {
			if dir, _, ok := strings.Cut(p, "/"); ok && dir == name {
				return true
			}
		}
	}
	return false
}

// Plan returns the files every output of stage writes for in, in the
// order of registration, and how to write them all.
func Plan(stage Stage, in Input) (files []string, write func(dir string) error) {
	var writes []func(string) error
	for _, o := range outputs {
		if o.Stage != stage {
			continue
		}
		f, w := o.Plan(in)
		if len(f) > 0 {
			files, writes = append(files, f...), append(writes, w)
		}
	}
	return files, func(dir string) error {
		for _, w := range writes {
			if err := w(dir); err != nil {
				return err
			}
		}
		return nil
	}
}

// PlanEnded is Plan of the Last outputs that a run ended early writes
// (Output.Ended), for in's summary, which says so.
func PlanEnded(in Input) (files []string, write func(dir string) error) {
	var writes []func(string) error
	for _, o := range outputs {
		if o.Stage != Last || !o.Ended {
			continue
		}
		f, w := o.Plan(in)
		if len(f) > 0 {
			files, writes = append(files, f...), append(writes, w)
		}
	}
	return files, func(dir string) error {
		var errs []error
		for _, w := range writes {
			errs = append(errs, w(dir)) // each on its own: one that fails leaves the others their say
		}
		return errors.Join(errs...)
	}
}

// Write writes every output of stage for in into dir.
func Write(stage Stage, dir string, in Input) error {
	_, write := Plan(stage, in)
	return write(dir)
}

// Planned is every file a run of world ranks writes for the phases that
// ran, as far as it is known before the run has a summary: every rank's
// files, then the combined ones, then the final ones whose names need no
// summary. A run lists them in run.json before it writes any.
func Planned(world int, ran Phases) []string { return planned(world, nil, ran) }

// PlannedOn is Planned for ranks on nodes (Input's Nodes, by rank).
func PlannedOn(nodes []int, ran Phases) []string { return planned(len(nodes), nodes, ran) }

func planned(world int, nodes []int, ran Phases) []string {
	var files []string
	for r := range world {
		f, _ := Plan(EachRank, Input{Rank: r, World: world, Ran: ran, Nodes: nodes})
		files = append(files, f...)
	}
	for _, stage := range []Stage{Combined, Final, Last} {
		f, _ := Plan(stage, Input{World: world, Ran: ran, Nodes: nodes})
		files = append(files, f...)
	}
	return dedupe(files)
}

// dedupe is files without repeats, in order: ranks of one node plan its
// one file.
func dedupe(files []string) []string {
	seen := map[string]bool{}
	return slices.DeleteFunc(files, func(f string) bool {
		dup := seen[f]
		seen[f] = true
		return dup
	})
}

// MayWrite is every file a run may write, known before it starts: what
// Planned lists, and every final output that the config's timing runs
// (runs, by name) may give, whether or not their data will draw it. A run
// checks each of these names before it creates anything (too long, a
// directory in a file's place), so that it is refused at once rather than
// after the whole run.
func MayWrite(world int, ran Phases, runs []string) []string {
	files := Planned(world, ran)
	for _, stage := range []Stage{Final, Last} {
		f, _ := Plan(stage, Input{World: world, Ran: ran, Runs: append([]string{}, runs...)})
		files = append(files, f...)
	}
	return dedupe(files)
}

package e2e

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"rsag/report"
)

// The hierarchical decomposition on one node of 4 ranks in groups of 2:
// its three contracts hold with the seed's five, every hierarchical mode's
// output is checked in both placements, hierarchical-lifetime's deltas are
// N and N + N/2 to the byte, and the whole uses the flat AllReduce's bus
// factor so that it compares with direct. (Ranks in this process: MPI's
// split is the backend check's, and the hierarchy across hosts is
// multinode_test's, under mpirun.)
func TestHierarchyInGroupsOfTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := inproc(t, 4, 2*time.Minute, "-config", "../configs/hierarchy.toml", "-backend", "mpi", "-output-dir", dir,
		"-set", "hierarchy.group_size=2")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "contracts_per_rank=8 ") {
		t.Errorf("want the seed's 5 contracts and the hierarchy's 3:\n%s", r.stdout)
	}
	contracts := readCSV(t, filepath.Join(dir, "contracts.csv"))
	held := map[string]int{}
	for _, row := range contracts[1:] {
		if row[2] == "True" {
			held[row[1]]++
		}
	}
	for _, name := range []string{"hierarchical-sum-equivalence", "hierarchical-wrong-group-rejected", "uneven-groups-rejected"} {
		if held[name] != 4 {
			t.Errorf("%s held on %d of 4 ranks", name, held[name])
		}
	}
	timings := readCSV(t, filepath.Join(dir, "timings.csv"))
	col := map[string]int{}
	for i, name := range timings[0] {
		col[name] = i
	}
	rows := map[string]int{}
	for _, row := range timings[1:] {
		if row[col["correct"]] != "True" {
			t.Errorf("not correct: %v", row)
		}
		rows[row[col["mode"]]]++
	}
	// 4 ranks x 3 sizes x 2 placements x 2 methods x 4 cycles.
	for _, mode := range []string{"direct", "decomposed", "hierarchical", "hierarchical-reduce-scatter", "hierarchical-all-reduce", "hierarchical-all-gather"} {
		if rows[mode] != 4*3*2*2*4 {
			t.Errorf("%s: %d rows, want %d", mode, rows[mode], 4*3*2*2*4)
		}
	}
	memory := readCSV(t, filepath.Join(dir, "memory.csv"))
	const n = 1075200
	for _, row := range memory[1:] {
		if row[1] != "hierarchical-lifetime" {
			continue
		}
		steady, _ := strconv.Atoi(row[4])
		peak, _ := strconv.Atoi(row[5])
		if steady != n || peak != n+n/2 || row[6] != "True" {
			t.Errorf("hierarchical-lifetime on rank %s: steady %d, peak %d, checked %s; want %d, %d, True", row[0], steady, peak, row[6], n, n+n/2)
		}
	}
	// The Crossover table names each decomposition by its own mode, and
	// fits a 120-column terminal: the long reasons are notes under it.
	crossover := r.stdout[strings.Index(r.stdout, "Crossover ("):]
	crossover = crossover[:strings.Index(crossover, "Where the decomposition's time goes")]
	for _, line := range strings.Split(crossover, "\n") {
		if len(line) > 120 && (strings.HasPrefix(line, "|") || strings.HasPrefix(line, "+")) {
			t.Errorf("the Crossover table has a line of %d columns:\n%s", len(line), crossover)
			break
		}
		if strings.Contains(line, "hierarchical") && strings.Contains(line, "decomposed") {
			t.Errorf("a row or note on the hierarchical decomposition speaks of the flat one: %s", line)
		}
	}
	if !regexp.MustCompile(`\|\s+hierarchical\s+\|\s+none \[[0-9]+\]|\|\s+hierarchical\s+\|\s+[0-9]`).MatchString(crossover) {
		t.Errorf("no hierarchical row in the Crossover table:\n%s", crossover)
	}
	s := checkSummary(t, filepath.Join(dir, report.SummaryFile))
	for _, st := range s.Timing {
		// busbw = algbw x factor: 2(W-1)/W = 1.5 for the whole on 4 ranks;
		// AllReduce across the 2 groups moves half the buffer at 2(2-1)/2.
		want := map[string]float64{"hierarchical": 1.5, "direct": 1.5, "hierarchical-all-reduce": 0.5,
			"hierarchical-reduce-scatter": 0.5, "hierarchical-all-gather": 0.5}[string(st.Mode)]
		if want != 0 && (st.BusBWGBps/st.AlgBWGBps < want-1e-9 || st.BusBWGBps/st.AlgBWGBps > want+1e-9) {
			t.Errorf("%s %d: busbw/algbw = %v, want %v", st.Mode, st.SizeBytes, st.BusBWGBps/st.AlgBWGBps, want)
		}
	}
}

// A world that does not split into equal groups is refused before any
// collective, with the numbers and the fix, said once.
func TestHierarchyRefusesUnevenGroups(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	r := inproc(t, 3, time.Minute, "-config", "../configs/hierarchy.toml", "-backend", "mpi", "-output-dir", out,
		"-set", "hierarchy.group_size=2", "-set", "timing.sizes_bytes=[3360]", "-set", "memory.payload_bytes=3360")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	saidOnce(t, r.stderr, "group_size 2 does not divide the world size 3")
}

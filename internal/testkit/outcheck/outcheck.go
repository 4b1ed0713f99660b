// Package outcheck checks an rsag output directory the way a user's notebook
// reads it: every file present with the seed's columns, the right number of
// rows, every contract and check passed, and memory deltas equal to their
// analytic values. The end-to-end and Slurm tests share it. Its expected
// values are written out here, independently of the code under test.
package outcheck

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Expect describes the run that produced the directory.
type Expect struct {
	World        int
	SizesBytes   []int64
	Cycles       int
	PayloadBytes int64
	MemoryModes  []string // in order
}

var (
	contractHeader = []string{"rank", "name", "correct", "detail"}
	timingHeader   = []string{"rank", "size_bytes", "mode", "cycle", "duration_us", "correct"}
	memoryHeader   = []string{"rank", "mode", "payload_bytes", "baseline_bytes", "steady_delta_bytes", "peak_delta_bytes", "correct"}
	contractNames  = []string{"exact-sum-equivalence", "wrong-shard-order-rejected", "wrong-reduction-op-rejected",
		"padding-and-trim-equivalence", "nondivisible-without-padding-rejected"}
)

// AllMemoryModes are the seed's four strategies and rs-ag-in-place.
var AllMemoryModes = []string{"allreduce-full", "reduce-scatter-shard", "rs-ag-naive-lifetime",
	"rs-ag-optimized-lifetime", "rs-ag-in-place"}

// Smoke is what configs/smoke.toml asks of a run on world ranks.
func Smoke(world int) Expect {
	return Expect{World: world, SizesBytes: []int64{3360, 215040, 1075200}, Cycles: 4, PayloadBytes: 1075200,
		MemoryModes: AllMemoryModes}
}

// Analytic returns a mode's steady and peak deltas for payload n on w ranks.
func Analytic(mode string, n int64, w int) (steady, peak int64) {
	s := n / int64(w)
	switch mode {
	case "allreduce-full", "rs-ag-in-place":
		return n, n
	case "reduce-scatter-shard":
		return s, n + s
	case "rs-ag-naive-lifetime":
		return n, 2*n + s
	case "rs-ag-optimized-lifetime":
		return n, n + s
	}
	return -1, -1
}

// Check returns the first problem found in dir, or nil.
func Check(dir string, e Expect) error {
	if err := checkManifest(dir); err != nil {
		return err
	}
	// The page a person opens, self-contained: its own tests open it in a
	// browser; here, that every run leaves one.
	if page, err := os.ReadFile(filepath.Join(dir, "report.html")); err != nil {
		return err
	} else if !strings.Contains(string(page), `id="verdict"`) || !strings.Contains(string(page), "</html>") {
		return fmt.Errorf("report.html (%d bytes) has no verdict banner or is cut short", len(page))
	}
	for r := 0; r < e.World; r++ {
		if err := checkRank(dir, r, e); err != nil {
			return err
		}
	}
	for _, c := range []struct {
		name    string
		header  []string
		perRank int
	}{
		{"contracts.csv", contractHeader, len(contractNames)},
		{"timings.csv", timingHeader, len(e.SizesBytes) * e.Cycles * 2},
		{"memory.csv", memoryHeader, len(e.MemoryModes)},
	} {
		recs, err := read(filepath.Join(dir, c.name))
		if err != nil {
			return err
		}
		host := slices.Index(recs[0], "host")
		if !slices.Equal(recs[0][:len(c.header)], c.header) || host < 0 {
			return fmt.Errorf("%s: header %v, want the seed's columns first and a host column", c.name, recs[0])
		}
		if got, want := len(recs)-1, c.perRank*e.World; got != want {
			return fmt.Errorf("%s: %d rows, want %d (every rank's)", c.name, got, want)
		}
		for _, row := range recs[1:] {
			if row[host] == "" {
				return fmt.Errorf("%s: a row has no host: %v", c.name, row)
			}
		}
	}
	return nil
}

func checkRank(dir string, r int, e Expect) error {
	rank := strconv.Itoa(r)
	file := func(kind string) string { return filepath.Join(dir, fmt.Sprintf("rank%d_%s.csv", r, kind)) }

	recs, err := readWithHeader(file("contracts"), contractHeader)
	if err != nil {
		return err
	}
	if len(recs) != len(contractNames) {
		return fmt.Errorf("rank %d: %d contracts, want %d", r, len(recs), len(contractNames))
	}
	for i, row := range recs {
		if row[0] != rank || row[1] != contractNames[i] || row[2] != "True" {
			return fmt.Errorf("rank %d contract %d: %v, want %s True", r, i, row, contractNames[i])
		}
	}
	if !strings.HasPrefix(recs[3][3], "logical=") || recs[4][3] == "" {
		return fmt.Errorf("rank %d: contract details %q, %q", r, recs[3][3], recs[4][3])
	}

	recs, err = readWithHeader(file("timings"), timingHeader)
	if err != nil {
		return err
	}
	if want := len(e.SizesBytes) * e.Cycles * 2; len(recs) != want {
		return fmt.Errorf("rank %d: %d timing rows, want %d", r, len(recs), want)
	}
	i := 0
	for _, size := range e.SizesBytes {
		for cycle := 0; cycle < e.Cycles; cycle++ {
			order := []string{"direct", "decomposed"}
			if cycle%2 == 1 {
				order = []string{"decomposed", "direct"}
			}
			for _, mode := range order {
				row := recs[i]
				i++
				d, err := strconv.ParseFloat(row[4], 64)
				if row[0] != rank || row[1] != strconv.FormatInt(size, 10) || row[2] != mode ||
					row[3] != strconv.Itoa(cycle) || err != nil || d <= 0 || row[5] != "True" {
					return fmt.Errorf("rank %d timing row %d: %v, want size %d %s cycle %d, positive, True", r, i, row, size, mode, cycle)
				}
			}
		}
	}

	recs, err = readWithHeader(file("memory"), memoryHeader)
	if err != nil {
		return err
	}
	if len(recs) != len(e.MemoryModes) {
		return fmt.Errorf("rank %d: %d memory rows, want %d", r, len(recs), len(e.MemoryModes))
	}
	for i, row := range recs {
		steady, peak := Analytic(e.MemoryModes[i], e.PayloadBytes, e.World)
		want := []string{rank, e.MemoryModes[i], strconv.FormatInt(e.PayloadBytes, 10), row[3],
			strconv.FormatInt(steady, 10), strconv.FormatInt(peak, 10), "True"}
		if !slices.Equal(row, want) {
			return fmt.Errorf("rank %d memory row: %v, want %v", r, row, want)
		}
	}
	return nil
}

func readWithHeader(path string, header []string) ([][]string, error) {
	recs, err := read(path)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(recs[0], header) {
		return nil, fmt.Errorf("%s: header %v, want %v", path, recs[0], header)
	}
	return recs[1:], nil
}

func read(path string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	return recs, nil
}

// CheckManifest is checkManifest, for a run whose files Check does not
// know (a soak).
func CheckManifest(dir string) error { return checkManifest(dir) }

// checkManifest: run.json says complete and lists exactly the files in
// the directory, itself included: nothing the run wrote is missing from
// it, nothing it lists is missing, and nothing else (a lock, a note, a
// temporary file) was left.
func checkManifest(dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		return err
	}
	var run struct {
		Status string   `json:"status"`
		Files  []string `json:"files"`
	}
	if err := json.Unmarshal(data, &run); err != nil {
		return fmt.Errorf("run.json: %w", err)
	}
	if run.Status != "complete" {
		return fmt.Errorf("run.json says %q, want complete", run.Status)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var present []string
	for _, e := range entries {
		if !e.IsDir() {
			present = append(present, e.Name())
			continue
		}
		// A folder of rsag's (ranks/): its files are listed by their
		// paths in it, and an empty one is something left behind.
		inner, err := os.ReadDir(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if len(inner) == 0 {
			present = append(present, e.Name()+"/")
		}
		for _, f := range inner {
			present = append(present, e.Name()+"/"+f.Name())
		}
	}
	slices.Sort(present)
	if listed := slices.Sorted(slices.Values(run.Files)); !slices.Equal(listed, present) {
		return fmt.Errorf("run.json lists %v, but the directory holds %v", listed, present)
	}
	return nil
}

// CheckHosts checks where the ranks ran against hosts, the host of each rank
// in rank order: summary.json's ranks (host, and a node-local rank that
// counts 0..k-1 over each host's ranks in rank order, the GPU index on GPU
// nodes) and nodes, and the host column of every row of the combined CSVs.
func CheckHosts(dir string, hosts []string) error {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return err
	}
	var s struct {
		Ranks []struct {
			Rank      int    `json:"rank"`
			Host      string `json:"host"`
			LocalRank *int   `json:"local_rank"`
		} `json:"ranks"`
		Nodes []struct {
			Host       string `json:"host"`
			Ranks      []int  `json:"ranks"`
			LocalRanks []int  `json:"local_ranks"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("summary.json: %w", err)
	}
	if len(s.Ranks) != len(hosts) {
		return fmt.Errorf("summary.json: %d ranks, want %d", len(s.Ranks), len(hosts))
	}
	type node struct{ ranks, local []int }
	want := map[string]*node{}
	var order []string
	for r, h := range hosts {
		if want[h] == nil {
			want[h] = &node{}
			order = append(order, h)
		}
		n := want[h]
		got := s.Ranks[r]
		if got.Rank != r || got.Host != h || got.LocalRank == nil || *got.LocalRank != len(n.ranks) {
			lr := "none"
			if got.LocalRank != nil {
				lr = strconv.Itoa(*got.LocalRank)
			}
			return fmt.Errorf("summary.json ranks[%d]: rank %d on %s, local rank %s; want rank %d on %s, local rank %d",
				r, got.Rank, got.Host, lr, r, h, len(n.ranks))
		}
		n.local = append(n.local, len(n.ranks))
		n.ranks = append(n.ranks, r)
	}
	if len(s.Nodes) != len(order) {
		return fmt.Errorf("summary.json: %d nodes, want %d (%v)", len(s.Nodes), len(order), order)
	}
	for i, h := range order {
		got := s.Nodes[i]
		if got.Host != h || !slices.Equal(got.Ranks, want[h].ranks) || !slices.Equal(got.LocalRanks, want[h].local) {
			return fmt.Errorf("summary.json nodes[%d]: %s ranks %v local %v; want %s ranks %v local %v",
				i, got.Host, got.Ranks, got.LocalRanks, h, want[h].ranks, want[h].local)
		}
	}
	for _, name := range []string{"contracts.csv", "timings.csv", "memory.csv"} {
		recs, err := read(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		host := slices.Index(recs[0], "host")
		if recs[0][0] != "rank" || host < 0 {
			return fmt.Errorf("%s: header %v, want rank first and a host column", name, recs[0])
		}
		for _, row := range recs[1:] {
			r, err := strconv.Atoi(row[0])
			if err != nil || r < 0 || r >= len(hosts) {
				return fmt.Errorf("%s: row %v: no rank of %d", name, row, len(hosts))
			}
			if row[host] != hosts[r] {
				return fmt.Errorf("%s: row %v: rank %d's host is %q, want %q", name, row, r, row[host], hosts[r])
			}
		}
	}
	return nil
}

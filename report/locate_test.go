package report_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/phase"
	"rsag/phases"
	"rsag/report"
)

// locateRun is a synthetic locate phase: nodes x per ranks, every
// measurement 100 us at the latency-bound size and 1000 us at the
// bandwidth-bound one, a few percent apart by unit and repeat; slow says
// how much slower a unit's measurement is (1: not).
func locateRun(t *testing.T, nodes, per int, slow func(step string, u phases.LocateUnit, p phases.LocateProbe) float64) (phase.LocateInput, report.Rows) {
	t.Helper()
	var hosts []string
	for n := range nodes {
		for range per {
			hosts = append(hosts, fmt.Sprintf("node%d", n+1))
		}
	}
	spec := phases.LocateSpec{SizesBytes: []int64{8 << 10, 1 << 20}, Collectives: coll.Collectives, Repeats: 3,
		Iterations: 2, MaxFullNodes: 64, MinPartners: 8}
	plan, err := phases.PlanLocate(hosts, spec)
	if err != nil {
		t.Fatal(err)
	}
	var rows report.Rows
	for _, st := range plan.Steps {
		for r, round := range st.Rounds {
			for ui, u := range round {
				for rep := range spec.Repeats {
					for pr, p := range spec.Probes() {
						base := 1000.0
						if p.Latency {
							base = 100
						}
						jitter := 1 + 0.01*float64((ui*7+rep*3+pr)%5)
						for _, m := range u.Members {
							rows.Locate = append(rows.Locate, report.LocateRow{Rank: m, Step: st.Name, Round: r, Repeat: rep,
								Unit: plan.UnitName(st, u), A: u.A, B: u.B, Probe: pr, Collective: p.Collective.Name,
								SizeBytes: p.SizeBytes, Bytes: p.SizeBytes, Ranks: len(u.Members),
								DurationUS: base * jitter * slow(st.Name, u, p), Host: hosts[m]})
						}
					}
				}
			}
			rows.LocateComms = append(rows.LocateComms, report.LocateCommRow{Rank: 0, Step: st.Name, Round: r, Member: true, SplitUS: 1500, FreeUS: 20})
		}
	}
	for r := range hosts {
		rows.LocateRanks = append(rows.LocateRanks, report.LocateRankRow{Rank: r, Seconds: 1.5 + float64(r)/10})
	}
	return phase.LocateInput{Plan: plan, Threshold: 0.8}, rows
}

func noFault(string, phases.LocateUnit, phases.LocateProbe) float64 { return 1 }

// touches says whether u is node n's or involves it (node indices).
func touches(step string, u phases.LocateUnit, n int) bool {
	return step != "ranks" && (u.A == n || u.B == n)
}

func TestLocateSummaryNamesTheCulprit(t *testing.T) {
	for _, c := range []struct {
		name     string
		nodes    int
		per      int
		slow     func(string, phases.LocateUnit, phases.LocateProbe) float64
		suspects []string
		kinds    []string
	}{
		{"no fault", 4, 1, noFault, nil, nil},
		{"node3's network", 4, 1, func(step string, u phases.LocateUnit, p phases.LocateProbe) float64 {
			if step == "pairs" && touches(step, u, 2) && !p.Latency {
				return 4
			}
			return 1
		}, []string{"node3 (bandwidth 0.25x median)"}, []string{"node"}},
		{"link node1-node2", 4, 1, func(step string, u phases.LocateUnit, p phases.LocateProbe) float64 {
			if step == "pairs" && u.A == 0 && u.B == 1 && !p.Latency {
				return 5
			}
			return 1
		}, []string{"node1-node2 (link, bandwidth 0.20x median)"}, []string{"link"}},
		{"node2 inside, in latency", 4, 2, func(step string, u phases.LocateUnit, p phases.LocateProbe) float64 {
			if step == "inside" && u.A == 1 && p.Latency {
				return 10
			}
			return 1
		}, []string{"node2 (latency 0.10x median)"}, []string{"node"}},
		{"rank 5's pairs on node2", 2, 4, func(step string, u phases.LocateUnit, p phases.LocateProbe) float64 {
			if step == "ranks" && (u.A == 5 || u.B == 5) && !p.Latency {
				return 3
			}
			return 1
		}, []string{"rank 5 on node2 (bandwidth 0.33x median)"}, []string{"rank"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, rows := locateRun(t, c.nodes, c.per, c.slow)
			l := phase.LocateSummary(in, rows)
			var texts, kinds []string
			for _, s := range l.Suspects {
				texts, kinds = append(texts, s.Text), append(kinds, s.Kind)
			}
			if fmt.Sprint(texts) != fmt.Sprint(c.suspects) || fmt.Sprint(kinds) != fmt.Sprint(c.kinds) {
				t.Errorf("suspects %q (%v), want %q (%v)", texts, kinds, c.suspects, c.kinds)
			}
			if l.Seconds != 1.5+float64(c.nodes*c.per-1)/10 {
				t.Errorf("seconds %v: want the slowest rank's", l.Seconds)
			}
		})
	}
}

// A node whose ranks outnumber its processors judges none of them: the
// rank that looks slow there may be waiting for a processor (issue 34
// class 2). The same slow rank on a node with a processor each is named.
func TestACrowdedNodesRanksAreNotJudged(t *testing.T) {
	slow5 := func(step string, u phases.LocateUnit, p phases.LocateProbe) float64 {
		if step == "ranks" && (u.A == 5 || u.B == 5) && !p.Latency {
			return 3
		}
		return 1
	}
	in, rows := locateRun(t, 2, 4, slow5)
	in.Crowded = phase.Crowded(in.Plan.Ranks, []phase.CPUMask{
		phase.CPUMask{}.With(0), phase.CPUMask{}.With(1), phase.CPUMask{}.With(2), phase.CPUMask{}.With(3), // node1: a processor each
		phase.CPUMask{}.With(0).With(1), phase.CPUMask{}.With(0).With(1), phase.CPUMask{}.With(0).With(1), phase.CPUMask{}.With(0).With(1)})
	l := phase.LocateSummary(in, rows)
	if len(l.Suspects) != 0 || len(l.Intermittent) != 0 {
		t.Errorf("suspects %v, intermittent %v on a crowded node", l.Suspects, l.Intermittent)
	}
	want := "ranks outnumber processors on node2 (4 ranks on 2 processors)"
	var said bool
	for _, st := range l.Steps {
		said = said || strings.Contains(st.Inconclusive, want)
	}
	if !said || l.Verdict != "inconclusive" {
		t.Errorf("verdict %q, steps %+v: want inconclusive, saying %q", l.Verdict, l.Steps, want)
	}
	in.Crowded = phase.Crowded(in.Plan.Ranks, nil) // not known: nothing crowded
	if l := phase.LocateSummary(in, rows); len(l.Suspects) != 1 || l.Suspects[0].Text != "rank 5 on node2 (bandwidth 0.33x median)" {
		t.Errorf("uncrowded: suspects %v, want rank 5", l.Suspects)
	}
}

// A rank that waited for a processor for a share of the phase (a CPU hog
// on its core) is not judged either, whatever its node: on 16 cores, 2 of
// 20 clean runs beside a hog named such a rank "bandwidth 0.73x median".
func TestARankThatWaitedForAProcessorIsNotJudged(t *testing.T) {
	slow5 := func(step string, u phases.LocateUnit, p phases.LocateProbe) float64 {
		if step == "ranks" && (u.A == 5 || u.B == 5) && !p.Latency {
			return 3
		}
		return 1
	}
	in, rows := locateRun(t, 2, 4, slow5)
	for i := range rows.LocateRanks {
		if rows.LocateRanks[i].Rank == 5 {
			rows.LocateRanks[i].WaitedS = 0.4 * rows.LocateRanks[i].Seconds
		} else {
			rows.LocateRanks[i].WaitedS = 0.01 * rows.LocateRanks[i].Seconds // the scheduler's noise: judged
		}
	}
	l := phase.LocateSummary(in, rows)
	if len(l.Suspects) != 0 {
		t.Errorf("suspects %v: rank 5 waited for a processor 40%% of the phase", l.Suspects)
	}
	want := "rank 5 (waited for a processor 40% of the phase)"
	var said bool
	for _, st := range l.Steps {
		said = said || strings.Contains(st.Inconclusive, want)
	}
	if !said {
		t.Errorf("steps %+v do not say %q", l.Steps, want)
	}
	for _, p := range l.RankPairs {
		if slices.Contains(p.Ranks, 5) && p.Verdict != "not judged: waited for a processor 40% of the phase" {
			t.Errorf("rank pair %v: %q", p.Ranks, p.Verdict)
		}
	}
}

// The report.Locate table of a slow node and of a slow link, as rank 0 prints it.
func TestLocateTableGolden(t *testing.T) {
	var b bytes.Buffer
	in, rows := locateRun(t, 4, 2, func(step string, u phases.LocateUnit, p phases.LocateProbe) float64 {
		switch {
		case step == "pairs" && touches(step, u, 2) && !p.Latency:
			return 3
		case step == "pairs" && u.A == 0 && u.B == 1 && p.Latency:
			return 4
		}
		return 1
	})
	l := *phase.LocateSummary(in, rows)
	if err := report.LocateTable(&b, l); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(&b, report.LocateLine(l, false))
	fmt.Fprintln(&b, report.LocateLine(l, true))
	golden := filepath.Join("testdata", "locate.golden.txt")
	if report.Update() {
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run LocateTableGolden -update)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("the Locate table differs from %s (if intended, rerun with -update and review the diff):\n%s", golden, report.FirstDifference(string(want), b.String()))
	}
	for _, s := range []string{"SUSPECT: bandwidth 0.33x median (pairs)", "node1-node2", "suspects: node3 (bandwidth 0.33x median), node1-node2 (link, latency 0.25x median): sbatch --exclude=node3,node1,node2 ..."} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the table lacks %q:\n%s", s, b.String())
		}
	}
}

// A summary with a locate section (suspects, skipped steps, rank pairs)
// follows the schema, and reads back strictly.
func TestLocateSummaryValidatesAgainstTheSchema(t *testing.T) {
	sch := report.CompileSchema(t)
	for name, shape := range map[string][2]int{"4 nodes of 2": {4, 2}, "1 node of 4": {1, 4}, "2 nodes of 3": {2, 3}} {
		in, rows := locateRun(t, shape[0], shape[1], func(step string, u phases.LocateUnit, p phases.LocateProbe) float64 {
			if u.A == 0 && !p.Latency {
				return 3
			}
			return 1
		})
		s := report.FixedSummary()
		s.Locate = phase.LocateSummary(in, rows)
		var b bytes.Buffer
		if err := report.EncodeSummary(&b, s); err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(b.Bytes()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		dec := json.NewDecoder(bytes.NewReader(b.Bytes()))
		dec.DisallowUnknownFields()
		var back report.Summary
		if err := dec.Decode(&back); err != nil || back.Locate == nil || len(back.Locate.Steps) != 3 {
			t.Errorf("%s: strict decode: %v, %+v", name, err, back.Locate)
		}
	}
	// The schema refuses a suspect of no known kind.
	in, rows := locateRun(t, 4, 1, func(step string, u phases.LocateUnit, p phases.LocateProbe) float64 {
		if touches(step, u, 3) {
			return 4
		}
		return 1
	})
	s := report.FixedSummary()
	s.Locate = phase.LocateSummary(in, rows)
	s.Locate.Suspects[0].Kind = "switch"
	var b bytes.Buffer
	if err := report.EncodeSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	if sch.Validate(b.Bytes()) == nil {
		t.Error("the schema accepted a suspect of kind \"switch\"")
	}
}

// locate.csv is planned and written when the phase ran, not otherwise,
// with every rank's rows.
func TestLocateCSV(t *testing.T) {
	_, rows := locateRun(t, 4, 1, noFault)
	dir := t.TempDir()
	files, write := report.Plan(report.Combined, report.Input{World: 4, Ran: report.Ran(report.Locate), Rows: rows})
	if !strings.Contains(strings.Join(files, " "), report.LocateFile) {
		t.Fatalf("planned %v, want %s", files, report.LocateFile)
	}
	if err := write(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, report.LocateFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(string(data), "\r\n", "\n")), "\n")
	if lines[0] != "rank,step,round,repeat,unit,a,b,probe,collective,size_bytes,bytes,ranks,duration_us,host" || len(lines) != 1+len(rows.Locate) {
		t.Errorf("locate.csv: %d lines, header %q", len(lines), lines[0])
	}
	if files, _ := report.Plan(report.Combined, report.Input{World: 4, Ran: report.Ran(), Rows: rows}); strings.Contains(strings.Join(files, " "), report.LocateFile) {
		t.Errorf("planned %s without the phase", report.LocateFile)
	}
}

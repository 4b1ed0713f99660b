package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// inconclusiveSummary is a complete run whose contracts held, whose
// locate phase named no suspect but could not judge (a spread too wide on
// every node), and whose table-only phase "probe" failed one row of two.
func inconclusiveSummary() Summary {
	s := fixedSummary()
	s.Contracts[1].HeldOn, s.Contracts[1].FailedRanks = 2, []int{}
	for i := range s.Timing {
		s.Timing[i].Correct = true
	}
	s.Locate = &SummaryLocate{Threshold: 0.5, Repeats: 3, Verdict: "inconclusive",
		Nodes: []SummaryLocateNode{{Host: "a", Verdict: "inconclusive: the spread is too wide (pairs)"},
			{Host: "b", Verdict: "inconclusive: the spread is too wide (pairs)"}},
		Steps: []SummaryLocateStep{{Name: "inside", Title: "inside each node", Note: "one rank per node"},
			{Name: "pairs", Title: "node pairs", Ran: true, Inconclusive: "the spread is too wide: healthy units spread to 3.11x the median"}}}
	s.Phases = []SummaryPhase{{Name: Contracts, Seconds: 1}, {Name: Timing, Seconds: 2}, {Name: Memory, Seconds: 1}, {Name: Locate, Seconds: 9},
		{Name: "probe", Seconds: 0.5, Table: &PhaseTable{Phase: "probe", Title: "Probe (a table of its own)", Columns: []string{"rank", "ok"},
			Rows: [][]string{{"0", "yes"}, {"1", "no"}}, Checks: true, Failed: []int{1}}}}
	return s
}

// The list has the run's status first, then every phase in the order it
// ran, the table-only one included, each check with its outcome: a locate
// phase that could not judge is inconclusive (its nodes too, never held),
// its step that did not run is not run, and the table's failed row fails.
func TestVerdictsOfEveryPhase(t *testing.T) {
	v := VerdictsOf(inconclusiveSummary())
	var got []string
	for _, p := range v.Phases {
		for _, c := range p.Checks {
			got = append(got, fmt.Sprintf("%s/%s=%s", p.Phase, c.Name, c.Outcome))
		}
	}
	for _, want := range []string{"run/status=held", "contracts/exact-sum-equivalence=held", "locate/a=inconclusive", "locate/b=inconclusive",
		"locate/inside each node=not run", "locate/node pairs=inconclusive", "probe/rank 0=held", "probe/rank 1=failed"} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("the list lacks %s:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if v.Phases[0].Phase != RunPhase || v.Phases[len(v.Phases)-1].Phase != "probe" {
		t.Errorf("phases out of order: %s", got)
	}
	if v.Outcome != Failed {
		t.Errorf("outcome %s with a failed table row, want failed", v.Outcome)
	}
	// Without the failed row, the run is inconclusive, not held.
	s := inconclusiveSummary()
	s.Phases[4].Table.Failed = []int{}
	if v := VerdictsOf(s); v.Outcome != Inconclusive {
		t.Errorf("outcome %s with locate inconclusive, want inconclusive", v.Outcome)
	}
	// And with locate healthy, held; a suspect is a finding, not a failure.
	s.Locate = &SummaryLocate{Threshold: 0.5, Verdict: "suspects", Nodes: []SummaryLocateNode{{Host: "a", Verdict: "healthy"},
		{Host: "b", Verdict: "SUSPECT: bandwidth 0.31x median (pairs)", Suspect: true}},
		Suspects: []SummaryLocateSuspect{{Kind: "node", Nodes: []string{"b"}, Problem: "bandwidth", Figure: 0.31, Text: "b (bandwidth 0.31x median)"}}}
	v = VerdictsOf(s)
	if f := v.Findings(); v.Outcome != Held || len(f) != 1 || f[0].Name != "b" || f[0].Message != "bandwidth 0.31x median" {
		t.Errorf("a suspect: outcome %s, findings %+v; want held with b's", v.Outcome, f)
	}
}

// A summary whose config enabled contracts and timing but which has no
// results of them (a run cut short, a file edited) is not held: those
// phases are not run, and so is the run's outcome.
func TestVerdictsSayWhatDidNotRun(t *testing.T) {
	s := fixedSummary()
	s.Config = map[string]any{"contracts": map[string]any{"enabled": true}, "timing": map[string]any{"enabled": true},
		"soak": map[string]any{"enabled": false}}
	s.Contracts, s.Timing, s.Memory = nil, nil, nil
	v := VerdictsOf(s)
	notRun := map[string]bool{}
	for _, p := range v.Phases {
		if p.Outcome == NotRun {
			notRun[p.Phase] = true
		}
	}
	if v.Outcome != NotRun || !notRun[Contracts] || !notRun[Timing] || notRun[Soak] {
		t.Errorf("outcome %s, not run %v: want not run, contracts and timing (soak is off)", v.Outcome, notRun)
	}
	if d := Disabled(s); len(d) != 1 || d[0] != Soak {
		t.Errorf("disabled %v, want soak", d)
	}
}

// Under timing.check = "last" no line says every sample was checked.
func TestVerdictsUnderCheckLast(t *testing.T) {
	s := fixedSummary()
	for i := range s.Timing {
		s.Timing[i].Unchecked = 6
	}
	for _, p := range VerdictsOf(s).Phases {
		if p.Phase != Timing {
			continue
		}
		if strings.Contains(p.Text, "every sample") || p.Note == "" || !strings.Contains(p.Short(), "only the last sample") {
			t.Errorf("timing under check = last: %q, note %q, short %q", p.Text, p.Note, p.Short())
		}
		for _, c := range p.Checks {
			if strings.Contains(c.Message, "every sample") {
				t.Errorf("check %s says %q", c.Name, c.Message)
			}
		}
	}
}

// A summary read back has its list computed again from its sections: an
// edited "held" cannot hide a failed contract. A phase this rsag has no
// checks for keeps the rows the file gave it.
func TestReadSummaryComputesTheListAgain(t *testing.T) {
	s := fixedSummary() // a contract failed on rank 1
	forged := Verdicts{Outcome: Held, Phases: []PhaseVerdict{{Phase: Contracts, Title: "Contracts", Outcome: Held, Text: "all held",
		Checks: []Check{{Name: "wrong-shard-order-rejected", Outcome: Held, Kind: KindContract}}},
		{Phase: "elsewhere", Title: "Elsewhere", Outcome: Failed, Text: "x", Checks: []Check{{Name: "x", Outcome: Failed, Kind: KindCheck, Message: "x"}}}}}
	s.Verdict = &forged
	s.Phases = []SummaryPhase{{Name: Contracts}, {Name: "elsewhere"}}
	var b bytes.Buffer
	if err := EncodeSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummary("summary.json", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	v := VerdictsIn(back)
	phases := map[string]PhaseVerdict{}
	for _, p := range v.Phases {
		phases[p.Phase] = p
	}
	if v.Outcome != Failed || phases[Contracts].Outcome != Failed || phases["elsewhere"].Outcome != Failed {
		t.Errorf("read back: outcome %s, contracts %s, elsewhere %s; want failed, failed, failed (kept)",
			v.Outcome, phases[Contracts].Outcome, phases["elsewhere"].Outcome)
	}
}

// junit.xml and rsag.prom of the inconclusive run with a table-only phase
// (testdata goldens): every phase of the list is a suite, the table's
// failed row a failure, an inconclusive check skipped with its reason;
// rsag.prom has the run's outcome and each check's.
func TestVerdictOutputsGolden(t *testing.T) {
	s := inconclusiveSummary()
	v := VerdictsOf(s)
	s.Verdict = &v
	var x bytes.Buffer
	if err := EncodeJUnit(&x, JUnit(s)); err != nil {
		t.Fatal(err)
	}
	golden(t, "verdicts.junit.golden.xml", x.Bytes())
	for _, want := range []string{`<testsuite name="probe" tests="2" failures="1"`, `<testcase name="rank 1" classname="rsag.probe">`,
		`<skipped message="inconclusive: the spread is too wide: healthy units spread to 3.11x the median" type="inconclusive">`,
		`<skipped message="not run: one rank per node" type="not run">`} {
		if !strings.Contains(x.String(), want) {
			t.Errorf("junit.xml lacks %s", want)
		}
	}
	var m bytes.Buffer
	if err := EncodeMetrics(&m, s, nil); err != nil {
		t.Fatal(err)
	}
	golden(t, "verdicts.prom.golden.txt", m.Bytes())
	for _, want := range []string{`rsag_verdict{outcome="failed"} 1`, `rsag_inconclusive 1`,
		`rsag_check_outcome{check="rank 1",outcome="failed",phase="probe"} 1`,
		`rsag_check_outcome{check="a",outcome="inconclusive",phase="locate"} 1`,
		`rsag_phase_checks{outcome="failed",phase="probe"} 1`, `rsag_phase_checks{outcome="inconclusive",phase="locate"} 3`} {
		if !strings.Contains(m.String(), want+"\n") {
			t.Errorf("rsag.prom lacks %s", want)
		}
	}
	// The list round-trips through summary.json as the schema says.
	var b bytes.Buffer
	if err := EncodeSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, compileSchema(t), b.Bytes()); err != nil {
		t.Errorf("summary.json with its list: %v", err)
	}
	var back struct{ Verdict Verdicts }
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Verdict.Outcome != Failed || len(back.Verdict.Phases) != len(v.Phases) {
		t.Errorf("summary.json's verdict: %+v (%v)", back.Verdict, err)
	}
}

// Locate's closing line does not read as healthy when the phase could not
// judge: "no suspect" says it was inconclusive in the same line.
func TestLocateLineSaysInconclusive(t *testing.T) {
	l := *inconclusiveSummary().Locate
	got := LocateLine(l, false)
	first, _, _ := strings.Cut(got, "\n")
	if !strings.Contains(first, "no suspect among 2 nodes, but inconclusive") || !strings.Contains(got, "node pairs: inconclusive: the spread is too wide") {
		t.Errorf("locate's line of an inconclusive phase:\n%s", got)
	}
	l.Verdict = "healthy"
	l.Steps[1].Inconclusive = ""
	l.Nodes = []SummaryLocateNode{{Host: "a", Verdict: "healthy"}, {Host: "b", Verdict: "healthy"}}
	if got := LocateLine(l, false); got != "locate: no suspect among 2 nodes" {
		t.Errorf("a healthy phase's line: %q", got)
	}
	// A node slow in every repeat, but within the noise: its step judged
	// the others, and the line does not call it healthy.
	l.Nodes[1].Verdict = "inconclusive: within the noise (pairs)"
	want := "locate: no suspect among 2 nodes, but not every node is called healthy (below)\n" +
		"locate: not called healthy: b (inconclusive: within the noise (pairs))"
	if got := LocateLine(l, false); got != want {
		t.Errorf("a node within the noise: %q, want %q", got, want)
	}
}

// A node that could not be judged makes the run inconclusive by itself:
// a suspect's row is a finding only when it names the node, never when
// it could not judge it.
func TestAnInconclusiveNodeIsNotAFinding(t *testing.T) {
	s := fixedSummary()
	s.Contracts[1].HeldOn, s.Contracts[1].FailedRanks = 2, []int{}
	for i := range s.Timing {
		s.Timing[i].Correct = true
	}
	s.Locate = &SummaryLocate{Threshold: 0.5, Repeats: 3, Verdict: "inconclusive",
		Nodes: []SummaryLocateNode{{Host: "a", Verdict: "inconclusive: the spread is too wide (pairs)"}}}
	if v := VerdictsOf(s); v.Outcome != Inconclusive || len(v.Findings()) != 0 {
		t.Errorf("one node inconclusive: outcome %s, findings %v", v.Outcome, v.Findings())
	}
}

// A phase with a table of its own may mark rows it could not judge: they
// are inconclusive checks, the run's outcome inconclusive, and the
// terminal's table says how many; merged over ranks, each keeps its row.
func TestATableRowMayBeInconclusive(t *testing.T) {
	a := PhaseTable{Phase: "probe", Title: "Probe", Columns: []string{"rank", "ok"}, Rows: [][]string{{"0", "?"}}, Checks: true, Failed: []int{},
		Inconclusive: []int{0}}
	b := PhaseTable{Phase: "probe", Title: "Probe", Columns: []string{"rank", "ok"}, Rows: [][]string{{"1", "yes"}}, Checks: true, Failed: []int{}}
	s := Summary{Status: Statuses[0], Phases: PhasesOf([]PhaseTime{{Name: "probe"}}, []PhaseTable{b, a})}
	if got := s.Phases[0].Table.Inconclusive; len(got) != 1 || got[0] != 1 {
		t.Fatalf("merged inconclusive rows %v, want [1]", got)
	}
	v := VerdictsOf(s)
	if v.Outcome != Inconclusive || v.Phases[1].Checks[1].Outcome != Inconclusive || v.Phases[1].Checks[0].Outcome != Held {
		t.Errorf("outcome %s, checks %+v", v.Outcome, v.Phases[1].Checks)
	}
	var b2 bytes.Buffer
	if err := PhaseTables(&b2, s.Phases); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b2.String(), "(phase probe: 0 of 2 rows failed, 1 inconclusive)") {
		t.Errorf("the terminal's table:\n%s", b2.String())
	}
}

// A sampled schedule never tried some pairs: the held text does not call
// their links healthy, and says which step's note names them.
func TestASampledScheduleIsNotCalledHealthyEverywhere(t *testing.T) {
	s := fixedSummary()
	s.Contracts[1].HeldOn, s.Contracts[1].FailedRanks = 2, []int{}
	for i := range s.Timing {
		s.Timing[i].Correct = true
	}
	note := "2 of 6 pairs never tried, their links neither healthy nor suspect (a-c, b-d)"
	s.Locate = &SummaryLocate{Threshold: 0.5, Repeats: 3, Verdict: "no suspect",
		Nodes: []SummaryLocateNode{{Host: "a", Verdict: "healthy"}, {Host: "b", Verdict: "healthy"}},
		Steps: []SummaryLocateStep{{Title: "between nodes, pair by pair", Ran: true, Schedule: "sampled", Note: note}}}
	for _, p := range VerdictsOf(s).Phases {
		if p.Phase != "locate" {
			continue
		}
		if strings.Contains(p.Text, "no node, link or rank") || !strings.Contains(p.Text, note) {
			t.Errorf("locate's text %q: want no claim of every link, and the step's note", p.Text)
		}
		return
	}
	t.Fatal("no locate phase in the list")
}

// Ranks that shared a GPU are said in every output that carries timings:
// junit.xml's suites, rsag.prom and the terminal's timing tables; and
// never in a run whose ranks each had their own.
func TestASharedGPUIsSaidInEveryOutput(t *testing.T) {
	const note = "GPU shared: 4 ranks ran on 1 GPU(s); timings measure NCCL's network transport, not the GPU's links"
	for _, shared := range []bool{true, false} {
		s := fixedSummary()
		if shared {
			s.GPUShared = note
		}
		var x, m, tb bytes.Buffer
		if err := EncodeJUnit(&x, JUnit(s)); err != nil {
			t.Fatal(err)
		}
		if err := EncodeMetrics(&m, s, nil); err != nil {
			t.Fatal(err)
		}
		if err := timingTables(&tb, s); err != nil {
			t.Fatal(err)
		}
		prop := `<property name="gpu_shared" value="GPU shared: 4 ranks ran on 1 GPU(s); timings measure NCCL&#39;s network transport`
		for what, got := range map[string]bool{"junit.xml's property": strings.Contains(x.String(), prop),
			"rsag.prom's gauge at 1":  strings.Contains(m.String(), "rsag_run_gpu_shared 1\n"),
			"the timing table's note": strings.Contains(tb.String(), "note: "+note)} {
			if got != shared {
				t.Errorf("shared %v: %s present %v", shared, what, got)
			}
		}
		if !shared && !strings.Contains(m.String(), "rsag_run_gpu_shared 0\n") {
			t.Errorf("rsag.prom lacks rsag_run_gpu_shared 0 for a run on GPUs of its own")
		}
	}
}

// A run ended early (end_on_stuck_rank, the watchdog, a signal) has no
// results: its list fails the run with the reason, says of a phase that
// had ended that its results were never gathered, and of every other
// enabled phase that it did not run because the run ended, and nothing
// holds; junit.xml and rsag.prom render that one list.
func TestARunEndedEarlySaysWhyEverywhere(t *testing.T) {
	reason := "stuck rank, named early: rank 1 on vm (pid 42) is stopped (state T); the job was ended early for it (end_on_stuck_rank), not at timeout_s"
	s := Summary{SchemaVersion: SummarySchemaVersion, Status: "failed", Reason: reason, EndedEarly: true, WorldSize: 4,
		Started: "2026-01-02T03:04:05Z", Ended: "2026-01-02T03:04:15Z",
		Config: map[string]any{"contracts": map[string]any{"enabled": true}, "timing": map[string]any{"enabled": true},
			"memory": map[string]any{"enabled": false}},
		Phases: []SummaryPhase{{Name: Contracts, Seconds: 1}}}
	v := VerdictsOf(s)
	got := map[string]Check{}
	for _, p := range v.Phases {
		for _, c := range p.Checks {
			got[p.Phase] = c
			if c.Outcome == Held {
				t.Errorf("%s %s held in a run that ended early", p.Phase, c.Name)
			}
		}
	}
	if v.Outcome != Failed || got[RunPhase].Outcome != Failed || !strings.Contains(got[RunPhase].Message, reason) {
		t.Errorf("outcome %s, run %+v; want failed with the reason", v.Outcome, got[RunPhase])
	}
	if c := got[Timing]; c.Outcome != NotRun || c.Message != "the run ended: "+reason {
		t.Errorf("timing: %+v; want not run: the run ended: REASON", c)
	}
	if c := got[Contracts]; c.Outcome != NotRun || !strings.Contains(c.Message, "the run ended before its results were gathered: "+reason) {
		t.Errorf("contracts: %+v; want not run, its results never gathered", c)
	}
	if _, ok := got[Memory]; ok {
		t.Errorf("memory, turned off, is in the list: %+v", got[Memory])
	}
	var j bytes.Buffer
	if err := EncodeJUnit(&j, JUnit(s)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<failure message="the run failed: stuck rank, named early: rank 1 on vm (pid 42)`,
		`<skipped message="not run: the run ended: stuck rank, named early: rank 1 on vm (pid 42)`} {
		if !strings.Contains(j.String(), want) {
			t.Errorf("junit.xml lacks %s:\n%s", want, j.String())
		}
	}
	var m bytes.Buffer
	if err := EncodeMetrics(&m, s, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`rsag_run_status{status="failed"} 1`, `rsag_run_status{status="complete"} 0`, `rsag_verdict{outcome="failed"} 1`,
		`rsag_run_checks_passed 0`, `rsag_check_outcome{check="timing",outcome="not run",phase="timing"} 1`} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("rsag.prom lacks %s:\n%s", want, m.String())
		}
	}
	if files, _ := PlanEnded(Input{Summary: &s}); strings.Join(files, " ") != "summary.json junit.xml rsag.prom" &&
		strings.Join(files, " ") != "junit.xml rsag.prom summary.json" {
		t.Errorf("a run ended early writes %v; want summary.json, junit.xml and rsag.prom", files)
	}
}

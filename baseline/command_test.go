package baseline

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/history"
	"rsag/internal/exitcode"
	"rsag/outdir"
	"rsag/report"
)

// runDir writes a complete run's output dir: summary.json with one timing
// case per entry of samples (its sizes 1K, 2K, ...), and timings.csv with
// those samples on rank 0. edit, when set, changes the summary first.
func runDir(t *testing.T, started string, samples [][]float64, edit func(*report.Summary)) string {
	t.Helper()
	dir := t.TempDir()
	s := report.Summary{SchemaVersion: report.SummarySchemaVersion, Status: outdir.StatusComplete, ChecksPassed: true, Started: started,
		WorldSize: 2, Backend: "mpi", Nodes: []report.SummaryNode{{Host: "n1", Ranks: []int{0, 1}}}}
	var rows []report.TimingRow
	for i, v := range samples {
		k := coll.Case{Run: "r", SizeBytes: int64(1024 << i), DType: coll.Float32, Op: coll.Sum, Placement: "in-place", Method: "per-op", Batch: 1,
			Mode: "direct", Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy}
		sorted := slices.Sorted(slices.Values(v))
		s.Timing = append(s.Timing, report.TimingStat{Case: k, Samples: len(v), Ranks: 2, MinUS: sorted[0], P10US: sorted[0], MedianUS: sorted[len(v)/2],
			P90US: sorted[len(v)-1], P99US: sorted[len(v)-1], MaxUS: sorted[len(v)-1], MeanUS: sorted[len(v)/2], Correct: true})
	}
	if edit != nil {
		edit(&s)
	}
	for i, v := range samples {
		for c, us := range v {
			rows = append(rows, report.TimingRow{Rank: 0, Case: s.Timing[i].Case, Cycle: c, DurationUS: us, Correct: report.Right})
		}
	}
	if err := report.WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := report.WriteCSV(&b, rows, report.AllColumns, true); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "timings.csv"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func scaled(k float64, v ...float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * k
	}
	return out
}

var tenSamples = []float64{10, 10.2, 10.1, 9.9, 10.3, 10, 10.1, 9.8, 10.2, 10}

// run is a front-end as main runs it: its exit status and what it said.
func run(front func([]string, io.Writer, io.Writer) error, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := exitcode.Say(&stderr, "rsag", front(args, &stdout, &stderr))
	return code, stdout.String(), stderr.String()
}

// compare and check are one judge: the same pair gives the same verdict,
// table and exit status through either front-end.
func TestCompareIsCheckAgainstOneRun(t *testing.T) {
	a := runDir(t, "2026-12-01T00:00:00Z", [][]float64{tenSamples, tenSamples}, nil)
	same := runDir(t, "2026-12-01T01:00:00Z", [][]float64{scaled(1.01, tenSamples...), tenSamples}, nil)
	slow := runDir(t, "2026-12-01T02:00:00Z", [][]float64{scaled(3, tenSamples...), tenSamples}, nil)
	little := runDir(t, "2026-12-01T03:00:00Z", [][]float64{scaled(1.3, tenSamples...), tenSamples}, nil)
	for _, c := range []struct {
		b    string
		code int
		want string
	}{
		{same, ExitOK, "ok: none of 2 case(s) slower"},
		{slow, ExitSlower, "FAIL: 1 of 2 case(s) slower"},
		// 1.3x against one run: the machine's spread is unknown.
		{little, ExitInconclusive, "inconclusive: one baseline run, spread unknown"},
	} {
		cc, cout, cerr := run(Compare, a, c.b)
		kc, kout, kerr := run(Command, "-baseline", a, c.b)
		if cc != c.code || kc != c.code || !strings.Contains(cout, c.want) || cout != kout || cerr != kerr {
			t.Errorf("%s: compare exit %d, check exit %d, want %d and %q\ncompare:\n%s%s\ncheck:\n%s%s", c.b, cc, kc, c.code, c.want, cout, cerr, kout, kerr)
		}
		if !strings.Contains(cout, "cannot separate the run from the machine") {
			t.Errorf("a one-run baseline does not say what it cannot do:\n%s", cout)
		}
	}
}

// A baseline of another kind is refused, naming the difference: another
// world size, or a shared GPU against GPUs of their own.
func TestUnlikeRunsAreRefused(t *testing.T) {
	a := runDir(t, "2026-12-01T00:00:00Z", [][]float64{tenSamples}, nil)
	four := runDir(t, "2026-12-01T01:00:00Z", [][]float64{scaled(50, tenSamples...)}, func(s *report.Summary) { s.WorldSize = 4 })
	shared := runDir(t, "2026-12-01T01:00:00Z", [][]float64{tenSamples}, func(s *report.Summary) { s.GPUShared = "GPU shared: 2 ranks ran on 1 GPU(s)" })
	for _, c := range []struct{ b, want string }{{four, "world size 4, not 2"}, {shared, "the GPU was shared"}} {
		code, out, errText := run(Compare, a, c.b)
		if code != ExitBadInput || !strings.Contains(errText, c.want) || strings.Contains(out, "SLOWER") {
			t.Errorf("%s: exit %d, want 2 naming %q\n%s%s", c.b, code, c.want, out, errText)
		}
	}
}

// Impossible samples, a run without its samples, and the wrong number of
// files are bad input; a case name's controls never reach the terminal raw.
func TestBadInputIsRefused(t *testing.T) {
	a := runDir(t, "2026-12-01T00:00:00Z", [][]float64{tenSamples}, nil)
	// The summary is right; timings.csv, edited, is not.
	zero := runDir(t, "2026-12-01T01:00:00Z", [][]float64{append([]float64{0}, tenSamples[1:]...)}, func(s *report.Summary) { s.Timing[0].MinUS, s.Timing[0].P10US = 9.8, 9.8 })
	alone := runDir(t, "2026-12-01T01:00:00Z", [][]float64{tenSamples}, nil)
	os.Remove(filepath.Join(alone, "timings.csv"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{a, zero}, "sample 1 is 0 µs"},
		{[]string{zero, a}, "sample 1 is 0 µs"},
		{[]string{a, alone}, "has no timings.csv"},
		{[]string{a}, "want two output dirs"},
		{[]string{"-tolerance", "1.5", a, a}, "-tolerance 1.5"},
	} {
		code, _, errText := run(Compare, c.args...)
		if code != ExitBadInput || !strings.Contains(errText, c.want) {
			t.Errorf("%v: exit %d, want 2 naming %q: %s", c.args, code, c.want, errText)
		}
	}
	odd := runDir(t, "2026-12-01T01:00:00Z", [][]float64{tenSamples}, func(s *report.Summary) { s.Timing[0].Run = "r\x1b]0;owned\x07" })
	_, out, errText := run(Compare, odd, odd)
	if strings.ContainsAny(out+errText, "\x1b\x07") || !strings.Contains(out, `\x1b]0;owned\x07`) {
		t.Errorf("controls reached the terminal raw, or the name is not shown:\n%q\n%q", out, errText)
	}
}

// -html writes B's page with the judge's section, never over an input or
// a file rsag did not write.
func TestThePageKeepsFilesItDidNotWrite(t *testing.T) {
	a := runDir(t, "2026-12-01T00:00:00Z", [][]float64{tenSamples}, nil)
	b := runDir(t, "2026-12-01T02:00:00Z", [][]float64{scaled(3, tenSamples...)}, nil)
	summary := filepath.Join(a, report.SummaryFile)
	before, _ := os.ReadFile(summary)
	notes := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notes, []byte("mine"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-overwrite", "-html", summary, a, b}, "which this command reads"},
		{[]string{"-overwrite", "-html", filepath.Join(b, "timings.csv"), a, b}, "which this command reads"},
		{[]string{"-html", notes, a, b}, "not a page rsag wrote"},
	} {
		if code, _, errText := run(Compare, c.args...); code != ExitBadInput || !strings.Contains(errText, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, code, errText, c.want)
		}
	}
	if got, _ := os.ReadFile(summary); !bytes.Equal(got, before) {
		t.Error("an input was written over")
	}
	if got, _ := os.ReadFile(notes); string(got) != "mine" {
		t.Error("a user's file was written over")
	}
	page := filepath.Join(t.TempDir(), "b.html")
	if code, _, errText := run(Compare, "-html", page, a, b); code != ExitSlower {
		t.Fatalf("exit %d: %s", code, errText)
	}
	data, _ := os.ReadFile(page)
	if !strings.Contains(string(data), "Against the baseline") || !strings.Contains(string(data), "SLOWER") {
		t.Errorf("the page lacks the judge's section")
	}
}

// A run whose ranks outnumbered their processors (or a baseline's) is
// never called slower or faster: its medians measure the ranks' turn-taking
// as much as the collective (identical runs beside a CPU hog, 4 ranks on 2
// processors, were called 2 to 4 times slower in 2 of 20 pairs). The case
// is inconclusive, with its ratio and why, and the exit status says so;
// an uncrowded pair with the same samples is still SLOWER.
func TestCrowdedRanksAreNeverCalledSlower(t *testing.T) {
	// The config's one run of cases, as smoke's: the table within 120 columns.
	plain := func(s *report.Summary) {
		for i := range s.Timing {
			s.Timing[i].Run = "default"
		}
	}
	crowd := func(s *report.Summary) { plain(s); s.Nodes[0].Crowded = "2 ranks on 1 processor" }
	a := runDir(t, "2026-12-01T00:00:00Z", [][]float64{tenSamples, tenSamples}, plain)
	slow := runDir(t, "2026-12-01T02:00:00Z", [][]float64{scaled(3, tenSamples...), tenSamples}, plain)
	crowdedA := runDir(t, "2026-12-01T00:00:00Z", [][]float64{tenSamples, tenSamples}, crowd)
	crowdedSlow := runDir(t, "2026-12-01T02:00:00Z", [][]float64{scaled(3, tenSamples...), tenSamples}, crowd)
	for _, c := range []struct {
		a, b string
		code int
		want string
	}{
		{a, slow, ExitSlower, "FAIL: 1 of 2 case(s) slower"},
		{a, crowdedSlow, ExitInconclusive, "inconclusive: 3x, ranks shared processors"},
		{crowdedA, slow, ExitInconclusive, "inconclusive: 3x, ranks shared processors"},
	} {
		code, out, errs := run(Command, "-baseline", c.a, c.b)
		if code != c.code || !strings.Contains(out, c.want) || (c.code != ExitSlower && strings.Contains(out, "SLOWER |")) {
			t.Errorf("%s against %s: exit %d, want %d and %q\n%s%s", c.b, c.a, code, c.code, c.want, out, errs)
		}
		for _, l := range strings.Split(out, "\n") {
			if len(l) > report.TerminalWidth {
				t.Errorf("%d columns, above %d: %q", len(l), report.TerminalWidth, l)
			}
		}
	}
}

// A run one of whose ranks sat runnable but not running for
// report.WaitedShare of its timing phase or more (beside a CPU hog: 2 ranks
// on 2 processors, not outnumbering them) is never called slower or
// faster, nor is one judged against such a baseline, a dir or a run of a
// history's last runs: the case is inconclusive, saying that the ranks
// waited for processors, and a note names the rank and the figure. A run
// whose ranks waited less, with the same samples, is still SLOWER.
func TestRanksThatWaitedForProcessorsAreNeverCalledSlower(t *testing.T) {
	waited := func(share float64) func(*report.Summary) {
		return func(s *report.Summary) {
			for i := range s.Timing {
				s.Timing[i].Run = "default"
			}
			s.Nodes = report.WithWaits(s.Nodes, []report.TimingRankRow{{Rank: 0, Seconds: 2, WaitedS: 0.02}, {Rank: 1, Seconds: 2, WaitedS: 2 * share}})
		}
	}
	quiet, hog := waited(0.1), waited(0.5)
	a := runDir(t, "2026-12-01T00:00:00Z", [][]float64{tenSamples, tenSamples}, quiet)
	waitedA := runDir(t, "2026-12-01T00:00:00Z", [][]float64{tenSamples, tenSamples}, hog)
	slow := runDir(t, "2026-12-01T02:00:00Z", [][]float64{scaled(3, tenSamples...), tenSamples}, quiet)
	waitedSlow := runDir(t, "2026-12-01T02:00:00Z", [][]float64{scaled(3, tenSamples...), tenSamples}, hog)
	// Two histories of three runs each before the slow ones, the second's
	// middle run beside a hog.
	quietDB, hogDB := filepath.Join(t.TempDir(), "quiet.db"), filepath.Join(t.TempDir(), "hog.db")
	for i, k := range []float64{1, 1.02, 0.98} {
		started := "2026-12-01T01:0" + strconv.Itoa(i) + ":00Z"
		q := runDir(t, started, [][]float64{scaled(k, tenSamples...), scaled(k, tenSamples...)}, quiet)
		h := q
		if i == 1 {
			h = runDir(t, started, [][]float64{scaled(k, tenSamples...), scaled(k, tenSamples...)}, hog)
		}
		for _, add := range [][2]string{{q, quietDB}, {h, hogDB}} {
			if code, out, errs := run(history.Command, "-append", add[0], add[1]); code != 0 {
				t.Fatalf("appending %s to %s: exit %d\n%s%s", add[0], add[1], code, out, errs)
			}
		}
	}
	const note = "ranks waited for processors (n1: rank 1 waited 50% of the timing phase for a processor)"
	for _, c := range []struct {
		baseline, run string
		code          int
		want          []string
	}{
		{a, slow, ExitSlower, []string{"FAIL: 1 of 2 case(s) slower"}},
		{a, waitedSlow, ExitInconclusive, []string{"inconclusive: 3x, ranks waited for processors", "note: the run's " + note}},
		{waitedA, slow, ExitInconclusive, []string{"inconclusive: 3x, ranks waited for processors", "note: the baseline's " + note}},
		{quietDB, slow, ExitSlower, []string{"FAIL: 1 of 2 case(s) slower"}},
		{hogDB, slow, ExitInconclusive, []string{"inconclusive: 3x, ranks waited for processors", "note: baseline run 2's " + note}},
	} {
		code, out, errs := run(Command, "-baseline", c.baseline, c.run)
		flat := strings.Join(strings.Fields(out), " ")
		ok := code == c.code && (c.code == ExitSlower) == strings.Contains(out, "SLOWER |")
		for _, w := range c.want {
			ok = ok && strings.Contains(flat, w)
		}
		if !ok {
			t.Errorf("%s against %s: exit %d, want %d and %q\n%s%s", c.run, c.baseline, code, c.code, c.want, out, errs)
		}
	}
}

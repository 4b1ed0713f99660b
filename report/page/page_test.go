package page

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/outdir"
	"rsag/report"
	"rsag/report/plot"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// load reads one of testdata's summaries, written by real 2-rank MPI runs:
// smoke-summary.json (configs/smoke.toml), model-mpi-summary.json
// (configs/model-mpi.toml: four modes over seven sizes, and the
// numerics), and rsag-552bdd6-smoke-summary.json, the smoke run of an rsag
// from before summary.json had nodes, fits, numerics, buffers and CTA
// policies.
func load(t *testing.T, name string) report.Summary {
	t.Helper()
	s, err := Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	// The tests edit what they load: the list of verdicts is computed
	// from the edited summary, as ReadSummary computes it from the file.
	s.Verdict = nil
	return s
}

func pageOf(t *testing.T, s report.Summary) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var svgBody = regexp.MustCompile(`(?s)(<svg role="img" aria-label="[^"]*")[^>]*>.*?</svg>`)

// structure is the page with each figure's drawing cut out (its element
// and description kept), and its style and script too: what the golden
// files hold, so that a change of gonum's output or of the style does not
// touch them while every heading, table, cell, check and description does.
func structure(page string) string {
	page = svgBody.ReplaceAllString(page, "$1>[drawing]</svg>")
	page = styleBody.ReplaceAllString(page, "<style>[page.css]</style>")
	return scriptBody.ReplaceAllString(page, "<script>[sort.js]</script>")
}

var (
	styleBody  = regexp.MustCompile(`(?s)<style>.*?</style>`)
	scriptBody = regexp.MustCompile(`(?s)<script>.*?</script>`)
)

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./report/page -update writes it)", err)
	}
	if got != string(want) {
		g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(g), len(w)) {
			if g[i] != w[i] {
				t.Fatalf("%s differs at line %d (if intended, go test ./report/page -update and review the diff):\n got: %s\nwant: %s",
					path, i+1, g[i], w[i])
			}
		}
		t.Fatalf("%s differs in length: %d lines, want %d (go test ./report/page -update)", path, len(g), len(w))
	}
}

func TestPageStructureGolden(t *testing.T) {
	for _, c := range []struct{ summary, golden string }{
		{"smoke-summary.json", "smoke.golden.html"},
		{"model-mpi-summary.json", "model-mpi.golden.html"},
		{"rsag-552bdd6-smoke-summary.json", "rsag-552bdd6-smoke.golden.html"},
	} {
		t.Run(c.golden, func(t *testing.T) { golden(t, c.golden, structure(pageOf(t, load(t, c.summary)))) })
	}
}

// The page fetches nothing and runs nothing but its own script: no
// reference to another file or host, and a policy that forbids them, with
// the hash of the one script it has.
func TestPageIsSelfContained(t *testing.T) {
	page := pageOf(t, load(t, "model-mpi-summary.json"))
	for _, bad := range []string{` src=`, `<link`, `@import`, `url(`, `http://`, `https://`, `<iframe`, `<object`, `<embed`} {
		if i := strings.Index(page, bad); i >= 0 {
			t.Errorf("the page has %q: %s", bad, page[max(0, i-80):min(len(page), i+80)])
		}
	}
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !strings.HasPrefix(m[1], "#") {
			t.Errorf("a link out of the page: %s", m[0])
		}
	}
	sum := sha256.Sum256([]byte(script))
	csp := `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-` + base64.StdEncoding.EncodeToString(sum[:])
	if !strings.Contains(strings.ReplaceAll(page, "&#43;", "+"), csp) {
		t.Errorf("no Content-Security-Policy %q in the page's head", csp)
	}
	if n := strings.Count(page, "<script>"); n != 1 || !strings.Contains(page, "<script>"+script+"</script>") {
		t.Errorf("%d scripts; want exactly the embedded sort.js", n)
	}
	if !strings.Contains(page, "@media print") {
		t.Error("no print stylesheet")
	}
}

// Every figure the run wrote as a file is in the page, as an image with a
// description, in the section that reads it.
func TestEveryFigureIsInThePage(t *testing.T) {
	for _, name := range []string{"smoke-summary.json", "model-mpi-summary.json", "rsag-552bdd6-smoke-summary.json"} {
		s := load(t, name)
		page := pageOf(t, s)
		figs := figureNames(s)
		if len(figs) < 4 {
			t.Fatalf("%s: figures %v: want time, busbw, ratio, crossover at least", name, figs)
		}
		for _, f := range figs {
			re := regexp.MustCompile(`<figure id="fig-` + regexp.QuoteMeta(f) + `">\s*<svg role="img" aria-label="[^"]{40,}"`)
			if !re.MatchString(page) {
				t.Errorf("%s: figure %s is not in the page as an image with a description", name, f)
			}
		}
		if n := strings.Count(page, "<figure "); n != len(figs) {
			t.Errorf("%s: %d figures in the page, want the run's %d", name, n, len(figs))
		}
		for _, id := range SectionIDs {
			if !strings.Contains(page, `<section id="`+id+`">`) {
				t.Errorf("%s: no section %q", name, id)
			}
		}
	}
}

func figureNames(s report.Summary) []string {
	var names []string
	for _, n := range plot.Names(Complete(s)) {
		if strings.HasSuffix(n, ".svg") {
			names = append(names, strings.TrimSuffix(n, ".svg"))
		}
	}
	return names
}

// The banner says what summary.json says: held only when the run is
// complete and every check passed, and a failure names what failed.
func TestBannerFollowsTheSummary(t *testing.T) {
	held := load(t, "smoke-summary.json")
	if v := verdictOf(held); !v.Held || !strings.HasPrefix(v.Headline, "Held") {
		t.Errorf("a complete run whose checks passed: %+v", v)
	}

	broken := load(t, "smoke-summary.json")
	broken.Status, broken.Reason, broken.ChecksPassed = outdir.StatusFailed, "contracts failed on rank(s) [1]", false
	broken.Contracts[1].HeldOn, broken.Contracts[1].FailedRanks = 1, []int{1}
	page := pageOf(t, broken)
	for _, want := range []string{`data-verdict="failed"`, `class="banner failed"`, "FAILED: contracts<",
		"wrong-shard-order-rejected failed on rank(s) 1", "contracts failed on rank(s) [1]"} {
		if !strings.Contains(page, want) {
			t.Errorf("a broken contract: the page lacks %q", want)
		}
	}

	// A bus-bandwidth gate the run fell below: the timing line is bad and
	// names the gate.
	gated := load(t, "smoke-summary.json")
	gated.Status, gated.Reason = outdir.StatusFailed, "bus bandwidth below the gate"
	gated.Config.(map[string]any)["runs"].([]any)[0].(map[string]any)["min_busbw_gbps"] = 1e4
	if c := lineOf(t, gated, "Timing results"); c.State != "bad" || !strings.Contains(c.Text, "< min_busbw_gbps 10000.00") {
		t.Errorf("a gate of 10000 GB/s: %+v", c)
	}
	gated.Config.(map[string]any)["runs"].([]any)[0].(map[string]any)["min_busbw_gbps"] = 1e-3
	gated.Status, gated.Reason = outdir.StatusComplete, ""
	if c := lineOf(t, gated, "Timing results"); c.State != "ok" || !strings.Contains(c.Text, "1 bus-bandwidth gate held") {
		t.Errorf("a gate of 0.001 GB/s: %+v", c)
	}
	if c := lineOf(t, held, "Timing results"); c.State != "ok" || strings.Contains(c.Text, "gate") {
		t.Errorf("no gate: %+v", c)
	}
}

// lineOf is the banner's line named, failing the test when there is none.
func lineOf(t *testing.T, s report.Summary, name string) check {
	t.Helper()
	for _, c := range verdictOf(s).Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("the banner has no %q line: %+v", name, verdictOf(s).Checks)
	return check{}
}

// The model's headline reads the crossover: the smoke run's RS + AG never
// comes within 5% on this machine's MPI, and a case that crosses says from
// where.
func TestModelHeadline(t *testing.T) {
	s := load(t, "model-mpi-summary.json")
	f := modelFindings(s)
	if len(f) != 1 || !strings.HasPrefix(f[0], "Model: RS + AG costs ") || !strings.Contains(f[0], "µs per call more than AllReduce") {
		t.Fatalf("findings %q", f)
	}
	c := s.Crossover[0]
	c.Measured.Found, c.Measured.Bytes = true, 1<<20
	if got := crossoverHeadline("RS + AG", []report.SummaryCrossover{c}); !strings.Contains(got, "within 5% of AllReduce from 1M on") {
		t.Errorf("a crossover at 1M: %q", got)
	}
	c.Measured = s.Crossover[0].Measured
	c.Measured.Found, c.FromFits, c.BandwidthRatio = false, true, 1.8
	if got := crossoverHeadline("RS + AG", []report.SummaryCrossover{c}); !strings.Contains(got, "never within 5% of AllReduce on this fabric, since it moves bytes 1.80x more slowly") {
		t.Errorf("B ratio 1.8: %q", got)
	}
	d := c
	d.Measured.Found, d.Measured.Bytes, d.ExtraLatencyUS = true, 4096, 3
	if got := crossoverHeadline("RS + AG", []report.SummaryCrossover{c, d}); !strings.Contains(got, "over 2 cases") ||
		!strings.Contains(got, "RS + AG is within 5% of AllReduce in 1 of 2 cases (from 4K on), and never in 1, where it is slower per byte") {
		t.Errorf("two cases: %q", got)
	}
}

// A summary from before nodes, fits and buffers existed gets them as the
// current rsag would have written them, and keeps what it has.
func TestOlderSummaryIsCompleted(t *testing.T) {
	old := load(t, "rsag-552bdd6-smoke-summary.json")
	if old.Nodes != nil || old.Fits != nil {
		t.Fatalf("the fixture has nodes or fits: it is not the old schema any more")
	}
	s := Complete(old)
	if len(s.Nodes) != 1 || len(s.Nodes[0].Ranks) != 2 || len(s.Fits) != 2 || len(s.Crossover) != 1 {
		t.Errorf("completed: nodes %+v, %d fits, %d crossovers", s.Nodes, len(s.Fits), len(s.Crossover))
	}
	cur := load(t, "smoke-summary.json")
	if again := Complete(cur); len(again.Fits) != len(cur.Fits) || len(again.Nodes) != len(cur.Nodes) {
		t.Error("Complete changed a current summary")
	}
}

// The locate phase's suspects and the soak's suspect ranks reach the
// banner: a slow node on a run that held is said in the headline and in
// the Suspects list; a soak that found a wrong element fails the banner
// and names the rank and its host. A run with neither has no such lines.
func TestBannerNamesTheCulprits(t *testing.T) {
	held := load(t, "smoke-summary.json")
	for _, c := range verdictOf(held).Checks {
		if (c.Name == "Soak" || c.Name == "Locate") && (c.State != "none" || !strings.HasPrefix(c.Text, "not run: [")) {
			t.Errorf("a run without soak or locate has a %s line that is not \"not run\": %+v", c.Name, c)
		}
	}
	if strings.Contains(pageOf(t, held), `id="suspects"`) {
		t.Error("a run without suspects lists some")
	}

	slow := load(t, "smoke-summary.json")
	slow.Locate = &report.SummaryLocate{Threshold: 0.8, Suspects: []report.SummaryLocateSuspect{
		{Kind: "node", Nodes: []string{"node3"}, Text: "node3 (bandwidth 0.31x median)"}}}
	v := verdictOf(slow)
	if !v.Held || v.Headline != "Held: AllReduce equals ReduceScatter + AllGather; but the run found the collectives slow on node3 (bandwidth 0.31x median)" {
		t.Errorf("a slow node on a run that held: %q (held %v)", v.Headline, v.Held)
	}
	page := pageOf(t, slow)
	for _, want := range []string{`<div id="suspects">`, "<li>node3 (bandwidth 0.31x median)</li>", `data-check="Locate"`} {
		if !strings.Contains(page, want) {
			t.Errorf("a slow node: the page lacks %q", want)
		}
	}

	wrong := load(t, "smoke-summary.json")
	wrong.Status, wrong.ChecksPassed, wrong.Reason = outdir.StatusFailed, false, "soak check failed on rank(s) [1]"
	wrong.Soak = &report.SummarySoak{Seed: 1, Iterations: 40, FailedIterations: 1, Verdict: "suspect rank 1 on node2: a reduction fault",
		SuspectRanks: []int{1}, Faults: []coll.StepFault{{Rank: 0, Host: "node1"}, {Rank: 1, Host: "node2"}}}
	v = verdictOf(wrong)
	if v.Held || v.Headline != "FAILED: soak" || fmt.Sprint(v.Suspects) != "[rank 1 on node2 (a wrong result in the soak)]" {
		t.Errorf("a wrong soak: %q, suspects %v", v.Headline, v.Suspects)
	}
	if c := lineOf(t, wrong, "Soak"); c.State != "bad" || c.Text != "2 of 2 failed: 40 iterations: every output correct: "+
		"1 of 40 iterations failed: suspect rank 1 on node2: a reduction fault; rank 1 on node2: a wrong result in the soak" {
		t.Errorf("a wrong soak's line: %+v", c)
	}
	page = pageOf(t, wrong)
	for _, want := range []string{`<section id="soak"`, "every wrong output, in iteration, mode, step and rank order", "<td>node2</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("a wrong soak: the page lacks %q", want)
		}
	}
	if strings.Contains(pageOf(t, held), `id="soak"`) || strings.Contains(pageOf(t, held), `id="locate"`) {
		t.Error("a run without soak or locate has their sections")
	}
	if !strings.Contains(pageOf(t, slow), `<section id="locate"`) {
		t.Error("a run with locate has no Locate section")
	}
	right := load(t, "smoke-summary.json")
	right.Soak = &report.SummarySoak{Seed: 3, Iterations: 1}
	if c := lineOf(t, right, "Soak"); c.State != "ok" || c.Text != "1 iteration, every output of every path right (seed 3)" {
		t.Errorf("a right soak's line: %+v", c)
	}
}

// A summary.json without the contracts and timing its config enabled (a
// run cut short, a file edited) is not "held": the banner says what did
// not run, and so does rsag report; a locate phase that could not judge
// makes the banner inconclusive, not held.
func TestBannerSaysWhatDidNotRun(t *testing.T) {
	s := load(t, "smoke-summary.json")
	s.Contracts, s.Timing, s.Fits, s.Crossover, s.Breakdown, s.Ratios = nil, nil, nil, nil, nil, nil
	v := verdictOf(s)
	if v.Held || v.Outcome != report.NotRun || !strings.HasPrefix(v.Headline, "NOT RUN: contracts, timing results") {
		t.Errorf("a summary without its contracts and timing: held %v, %s, %q", v.Held, v.Outcome, v.Headline)
	}
	page := pageOf(t, s)
	for _, want := range []string{`data-verdict="not-run"`, "rsag: NOT RUN,", "enabled in the config, but summary.json has no results of it"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, "Held:") || strings.Contains(page, "rsag: held") {
		t.Error("the page says held")
	}
	if w := verdictWord(s); w != "NOT RUN: a phase the config enabled has no results" {
		t.Errorf("rsag report's word: %q", w)
	}

	unsure := load(t, "smoke-summary.json")
	unsure.Locate = &report.SummaryLocate{Threshold: 0.5, Repeats: 3, Verdict: "inconclusive",
		Nodes: []report.SummaryLocateNode{{Host: "vm", Verdict: "inconclusive: the spread is too wide (pairs)"}}}
	v = verdictOf(unsure)
	if v.Held || v.Outcome != report.Inconclusive || !strings.HasPrefix(v.Headline, "INCONCLUSIVE: locate could not judge") {
		t.Errorf("an inconclusive locate: held %v, %s, %q", v.Held, v.Outcome, v.Headline)
	}
	if c := lineOf(t, unsure, "Locate"); c.State != "none" || !strings.Contains(c.Text, "inconclusive") {
		t.Errorf("the locate line: %+v", c)
	}
}

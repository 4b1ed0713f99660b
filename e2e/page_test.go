package e2e

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/testkit/browser"
	"rsag/internal/testkit/inmem"
	"rsag/outdir"
	"rsag/phase"
	"rsag/phases"
	"rsag/report"
	"rsag/report/page"
)

var update = flag.Bool("update", false, "rewrite docs/report.png from the smoke run's page")

// The window the page tests open pages in, CSS pixels.
const pageWidth, pageHeight = 1200, 1500

// One headless Chromium for the package's page tests, started by the
// first of them and ended by TestMain.
var chromium struct {
	once    sync.Once
	b       *browser.Browser
	err     error
	profile string
}

func pageBrowser(t *testing.T) *browser.Browser {
	t.Helper()
	chromium.once.Do(func() {
		chromium.profile, chromium.err = os.MkdirTemp("", "rsag-chromium")
		if chromium.err == nil {
			chromium.b, chromium.err = browser.Start(chromium.profile, pageWidth, pageHeight)
		}
	})
	if chromium.err != nil {
		t.Fatal(chromium.err)
	}
	return chromium.b
}

func closeBrowser() {
	if chromium.b != nil {
		chromium.b.Close()
	}
	if chromium.profile != "" {
		os.RemoveAll(chromium.profile)
	}
}

// shown is what the browser shows of a report page.
type shown struct {
	Verdict     string   `json:"verdict"`
	Headline    string   `json:"headline"`
	BannerColor string   `json:"bannerColor"`
	Headings    []int    `json:"headings"`
	Sections    []string `json:"sections"`
	Figures     []struct {
		ID    string  `json:"id"`
		Label string  `json:"label"`
		Role  string  `json:"role"`
		Width float64 `json:"width"`
	} `json:"figures"`
	Checks []struct {
		Name  string `json:"name"`
		State string `json:"state"`
		Text  string `json:"text"`
	} `json:"checks"`
	Sortable int `json:"sortable"`
}

const showJS = `(() => {
  const v = document.getElementById("verdict");
  return {
    verdict: v ? v.dataset.verdict : "",
    headline: v ? v.querySelector("h1").textContent : "",
    bannerColor: v ? getComputedStyle(v).borderLeftColor : "",
    headings: [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")].map(h => +h.tagName[1]),
    sections: [...document.querySelectorAll("main > section")].map(s => s.id),
    figures: [...document.querySelectorAll("figure")].map(f => {
      const svg = f.querySelector("svg");
      return {id: f.id, label: svg ? svg.getAttribute("aria-label") : "", role: svg ? svg.getAttribute("role") : "",
        width: svg ? svg.getBoundingClientRect().width : 0};
    }),
    checks: [...document.querySelectorAll("#verdict .checks li")].map(li => ({name: li.dataset.check, state: li.className, text: li.textContent})),
    sortable: document.querySelectorAll("table.sortable").length,
  };
})()`

// The banner's colours: Okabe-Ito's bluish green when the run held, its
// vermillion when it failed.
const (
	heldColor   = "rgb(0, 158, 115)"
	failedColor = "rgb(213, 94, 0)"
)

// checkPage opens dir/report.html from file:// in a real Chromium and
// checks what a reader gets: no console error and no request, every section
// and every figure the run wrote (as an image with a description, drawn
// at a readable width), headings in order, a banner that says what
// summary.json says, in words and marks as well as colour, sortable tables
// that sort, and a print style that leaves the navigation out. It keeps
// a screenshot of the page as it opens (see screenshot), under name.
func checkPage(t *testing.T, dir, name string) {
	t.Helper()
	p, err := pageBrowser(t).Open("file://"+filepath.Join(dir, page.File), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, p, name)
	s, err := page.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := browser.Eval[shown](p, showJS)
	if err != nil {
		t.Fatal(err)
	}
	if errs := p.Errors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %q", errs)
	}
	if reqs := p.Requests(); len(reqs) > 0 {
		t.Errorf("the page made requests: %q", reqs)
	}
	if !slices.Equal(got.Sections, page.SectionIDs) {
		t.Errorf("sections %v, want %v", got.Sections, page.SectionIDs)
	}
	checkVerdict(t, got, s.Status == outdir.StatusComplete && s.ChecksPassed)
	if len(got.Headings) == 0 || got.Headings[0] != 1 || slices.Index(got.Headings[1:], 1) >= 0 {
		t.Errorf("headings %v: want one h1, first", got.Headings)
	}
	for i := 1; i < len(got.Headings); i++ {
		if got.Headings[i] > got.Headings[i-1]+1 {
			t.Errorf("heading levels %v skip from h%d to h%d", got.Headings, got.Headings[i-1], got.Headings[i])
		}
	}
	// Every figure the run wrote, and nothing else.
	var files []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".svg"); ok {
			files = append(files, "fig-"+name)
		}
	}
	var ids []string
	for _, f := range got.Figures {
		ids = append(ids, f.ID)
		if f.Role != "img" || len(f.Label) < 40 || f.Width < 500 {
			t.Errorf("figure %s: role %q, description %q, %.0f px wide: want an image with a description, drawn 500 px wide or more",
				f.ID, f.Role, f.Label, f.Width)
		}
	}
	slices.Sort(ids)
	if len(files) == 0 || !slices.Equal(ids, files) {
		t.Errorf("figures in the page %v, want the run's %v", ids, files)
	}
	checkTablesFit(t, p)
	checkTail(t, p, s) // before the clicks below sort the rows
	// A click on a timing table's size heading sorts by size, twice the
	// other way; the timing table is the first sortable one.
	if got.Sortable == 0 {
		t.Error("no sortable table")
	} else {
		col := sizeColumn(t, p)
		for _, want := range []string{"ascending", "descending"} {
			if err := p.Click(fmt.Sprintf("#timing table.sortable th:nth-child(%d)", col+1)); err != nil {
				t.Fatal(err)
			}
			order, err := browser.Eval[[]float64](p, fmt.Sprintf(
				`[...document.querySelector("#timing table.sortable").tBodies[0].rows].map(r => +r.cells[%d].dataset.v)`, col))
			if err != nil {
				t.Fatal(err)
			}
			sorted := slices.IsSortedFunc(order, func(a, b float64) int {
				if want == "descending" {
					a, b = b, a
				}
				return cmp.Compare(a, b)
			})
			if len(order) < 2 || !sorted {
				t.Errorf("after a click on size, want %s: sizes %v", want, order)
			}
		}
	}
	// Printed, the page leaves the navigation and file names out.
	hidden, err := browser.EvalPrint[[]string](p, `[...document.querySelectorAll("nav, figcaption")].map(e => getComputedStyle(e).display)`)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range hidden {
		if d != "none" {
			t.Errorf("printed, the navigation or a caption shows (display %q)", d)
		}
	}
}

// overflowJS lists the tables whose container scrolls sideways: a column
// hidden behind a scrollbar.
const overflowJS = `[...document.querySelectorAll("div.scroll")].filter(d => d.scrollWidth > d.clientWidth + 1).map(d => {
  const s = d.closest("section"); const t = d.querySelector("table");
  return (s ? s.id : "?") + ": " + d.scrollWidth + " > " + d.clientWidth + " px, " + t.tHead.rows[0].cells.length + " columns";
})`

// checkTablesFit: at 1,400 px no table hides a column behind a scrollbar,
// and at 800 px the contracts table (four columns) still fits. It leaves
// the window as it found it.
func checkTablesFit(t *testing.T, p *browser.Page) {
	t.Helper()
	defer p.Resize(pageWidth, pageHeight)
	for _, c := range []struct {
		width int
		which string
	}{{1400, ""}, {800, "contracts: "}} {
		if err := p.Resize(c.width, pageHeight); err != nil {
			t.Fatal(err)
		}
		over, err := browser.Eval[[]string](p, overflowJS)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range over {
			if strings.HasPrefix(o, c.which) {
				t.Errorf("at %d px a table overflows its container: %s", c.width, o)
			}
		}
	}
}

// tailShown is what the timing tables show of the tail.
type tailShown struct {
	Heads  []string `json:"heads"`
	Rows   int      `json:"rows"`
	Strips int      `json:"strips"`
	Label  string   `json:"label"`
}

// checkTail: every timing table has p99 and max columns and a
// distribution strip in every row, described for a screen reader, and a
// row's p99 is the summary's.
func checkTail(t *testing.T, p *browser.Page, s report.Summary) {
	t.Helper()
	got, err := browser.Eval[tailShown](p, `(() => {
  const ts = [...document.querySelectorAll("#timing table")];
  const strips = ts.flatMap(t => [...t.querySelectorAll("tbody td svg.dist")]);
  return {heads: ts.length ? [...ts[0].tHead.rows[0].cells].map(c => c.textContent) : [],
    rows: ts.reduce((n, t) => n + t.tBodies[0].rows.length, 0), strips: strips.length,
    label: strips.length ? strips[0].getAttribute("role") + " " + strips[0].getAttribute("aria-label") : ""};
})()`)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"median [p10..p90]", "p99", "max", "distribution"} {
		if !slices.Contains(got.Heads, h) {
			t.Errorf("the timing table's columns %q lack %q", got.Heads, h)
		}
	}
	if got.Rows != len(s.Timing) || got.Strips != got.Rows || !strings.HasPrefix(got.Label, "img distribution, min ") {
		t.Errorf("%d timing rows, %d distribution strips (first %q); want a row and a strip per case and mode, %d",
			got.Rows, got.Strips, got.Label, len(s.Timing))
	}
	col := slices.Index(got.Heads, "p99")
	if col < 0 || len(s.Timing) == 0 {
		return
	}
	first, err := browser.Eval[string](p, fmt.Sprintf(`document.querySelector("#timing table").tBodies[0].rows[0].cells[%d].textContent`, col))
	if err != nil {
		t.Fatal(err)
	}
	if want := report.USText(s.Timing[0].P99US); first != want {
		t.Errorf("the first row's p99 reads %q; summary.json's is %s", first, want)
	}
}

// sizeColumn is the index of the size column of the first timing table.
func sizeColumn(t *testing.T, p *browser.Page) int {
	t.Helper()
	i, err := browser.Eval[int](p, `[...document.querySelector("#timing table.sortable").tHead.rows[0].cells].findIndex(c => c.textContent.startsWith("size"))`)
	if err != nil || i < 0 {
		t.Fatalf("no size column in the timing table: %d, %v", i, err)
	}
	return i
}

// on is a config section that turns its phase on or off.
func on(enabled bool) map[string]any { return map[string]any{"enabled": enabled} }

// checkVerdict: the banner says held or failed as the summary does, in its
// colour, and in words and marks that grey-scale print keeps.
func checkVerdict(t *testing.T, got shown, held bool) {
	t.Helper()
	want, color, word, mark := "failed", failedColor, "FAILED", "✗"
	if held {
		want, color, word, mark = "held", heldColor, "Held", "✓"
	}
	if got.Verdict != want || got.BannerColor != color {
		t.Errorf("banner %q in %s, want %q in %s", got.Verdict, got.BannerColor, want, color)
	}
	if !strings.HasPrefix(strings.TrimSpace(got.Headline), mark+" "+word) {
		t.Errorf("headline %q, want it to start with %q", got.Headline, mark+" "+word)
	}
	if len(got.Checks) < 6 {
		t.Errorf("checks %+v: want run, contracts, timing, memory and a line for each phase the config turned off", got.Checks)
	}
	for _, c := range got.Checks {
		m := map[string]string{"ok": "✓", "bad": "✗", "none": "–"}[c.State]
		if m == "" || !strings.HasPrefix(c.Text, m) {
			t.Errorf("check %q (%s) reads %q: want its state's mark %q first", c.Name, c.State, c.Text, m)
		}
	}
}

// samePageAgain: rsag report on a copy of the run's dir writes the page the
// run wrote, byte for byte.
func samePageAgain(t *testing.T, dir string) {
	t.Helper()
	cp := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == page.File {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(cp, e.Name()), data, 0o644)
	}
	out, err := exec.Command(rsagBin, "report", cp).CombinedOutput()
	if err != nil {
		t.Fatalf("rsag report %s: %v\n%s", cp, err, out)
	}
	for _, want := range []string{"Timings (us per operation", "wrote " + filepath.Join(cp, page.File)} {
		if !strings.Contains(string(out), want) {
			t.Errorf("rsag report's output lacks %q:\n%s", want, out)
		}
	}
	ran, _ := os.ReadFile(filepath.Join(dir, page.File))
	again, _ := os.ReadFile(filepath.Join(cp, page.File))
	if len(ran) == 0 || !bytes.Equal(ran, again) {
		t.Errorf("rsag report wrote a page of %d bytes that differs from the run's %d", len(again), len(ran))
	}
}

// screenshot keeps the page's first screen: under $RSAG_SCREENSHOT_DIR when
// set, and as docs/report.png under -update.
func screenshot(t *testing.T, p *browser.Page, name string) {
	t.Helper()
	png, err := p.Viewport()
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 20<<10 || string(png[1:4]) != "PNG" {
		t.Errorf("screenshot of %d bytes: want a PNG of the page", len(png))
	}
	if d := os.Getenv("RSAG_SCREENSHOT_DIR"); d != "" {
		full, err := p.Screenshot()
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, name+".png"), png, 0o644)
		os.WriteFile(filepath.Join(d, name+"-full.png"), full, 0o644)
	}
	if *update && name == "smoke" {
		if err := os.WriteFile("../docs/report.png", png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A broken contract turns the banner red: the contracts run on an
// in-memory backend whose AllGather rotates the shards by one rank (a
// negative control of package phases), and the page of what they found
// says FAILED and names the contracts that failed, in a real browser.
func TestBrokenContractTurnsTheBannerRed(t *testing.T) {
	t.Parallel()
	const world = 2
	results := make([][]phases.ContractResult, world)
	errs := inmem.Launch(world, inmem.Faults{RotatedGather: true}, func(be coll.Backend, _ coll.Comm) error {
		var err error
		results[be.Rank()], err = phases.RunContracts(be)
		return err
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	var all []report.Rows
	var infos []coll.Info
	for r := range world {
		all = append(all, report.Rows{Contracts: phase.ContractRows(r, "inmem", results[r])})
		infos = append(infos, coll.Info{Backend: "inmem", Host: "inmem", LocalRank: r, Device: "host memory"})
	}
	rows := report.Merge(all)
	// As the run does when a contract fails: the phase stops the run, and
	// the summary says failed with the reason.
	s := report.NewSummary(report.SummaryInput{Version: "test", Commit: "test", Status: outdir.StatusFailed,
		Reason: "contracts failed on rank(s) [0 1]", Started: time.Unix(0, 0), Ended: time.Unix(1, 0),
		Config: map[string]any{"contracts": on(true), "timing": on(true), "memory": on(true), "numerics": on(false), "soak": on(false),
			"locate": on(false)}, Infos: infos, Rows: rows, World: world})
	if s.ChecksPassed {
		t.Fatal("the rotated AllGather broke no contract: the negative control is gone")
	}
	dir := t.TempDir()
	if err := page.WriteFile(filepath.Join(dir, page.File), s); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
	p, err := pageBrowser(t).Open("file://"+filepath.Join(dir, page.File), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, err := browser.Eval[shown](p, showJS)
	if err != nil {
		t.Fatal(err)
	}
	checkVerdict(t, got, false)
	if errs := p.Errors(); len(errs) > 0 {
		t.Errorf("the page logged errors: %q", errs)
	}
	var contracts string
	for _, c := range got.Checks {
		if c.Name == "Contracts" {
			contracts = c.Text
			if c.State != "bad" {
				t.Errorf("the contracts' check is %q, want bad", c.State)
			}
		}
	}
	for _, name := range []string{phases.ExactSumEquivalence, phases.PaddingAndTrim} {
		if !strings.Contains(contracts, name) {
			t.Errorf("the contracts' check %q does not name %s", contracts, name)
		}
	}
	screenshot(t, p, "broken-contract")
}

package history

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"rsag/coll"
	"rsag/report"
)

// rsag history -html writes one self-contained page: the runs, a figure
// per case of its median over the runs (the step's runs marked) and per
// node of its count as a suspect (the runs that named it marked), every
// figure well-formed SVG with its description, and nothing fetched.
func TestHistoryPageHasAFigurePerCaseAndPerNode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		r := synthetic(i)
		k := r.Summary.Timing[0].Case
		other := k
		other.SizeBytes = 65536
		us := 100.0
		if i >= 4 {
			us = 150 // the step, in the last two runs
		}
		r.Samples = map[coll.Case][]float64{k: {us, us, us}, other: {7, 7, 7}}
		r.Summary.Timing = []report.TimingStat{{Case: k, Samples: 3, MedianUS: us}, {Case: other, Samples: 3, MedianUS: 7}}
		r.Summary.Nodes = []report.SummaryNode{{Host: "n1", Ranks: []int{0}}, {Host: "n2", Ranks: []int{1}}}
		if i == 2 || i == 5 {
			r.Summary.Locate = &report.SummaryLocate{Suspects: []report.SummaryLocateSuspect{{Kind: "node", Nodes: []string{"n2"}, Problem: "bandwidth", Text: "n2 (bandwidth 0.5x median)"}}}
		}
		if _, err := db.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	pagePath := filepath.Join(dir, "history.html")
	var stdout, stderr strings.Builder
	if err := Command([]string{"-html", pagePath, path}, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "wrote "+pagePath) || !strings.Contains(stdout.String(), "median us per operation") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
	data, err := os.ReadFile(pagePath)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	// It parses as HTML (the lenient XML reader, HTML's void elements
	// closed), and each figure as strict XML: SVG is.
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	elements := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the page does not parse: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			elements[se.Name.Local]++
		}
	}
	// A case's medians on a log axis (one slow run does not flatten the
	// rest); a node's count of runs from 0.
	if !strings.Contains(page, "median µs per operation (log)") {
		t.Error("the case figures are not on a log axis")
	}
	if elements["html"] != 1 || elements["table"] != 3 || elements["figure"] != 4 || elements["svg"] != 4 {
		t.Errorf("want 1 html, 3 tables, 4 figures with 4 svg; got %v", elements)
	}
	figures := regexp.MustCompile(`(?s)<figure id="(fig-[a-z0-9-]+)">\s*(<svg role="img" aria-label="([^"]*)".*?</svg>)`).FindAllStringSubmatch(page, -1)
	var ids []string
	for _, f := range figures {
		ids = append(ids, f[1])
		if err := xml.Unmarshal([]byte(f[2]), new(struct{})); err != nil {
			t.Errorf("%s is not well-formed SVG: %v", f[1], err)
		}
	}
	if got := strings.Join(ids, " "); got != "fig-case-1 fig-case-2 fig-node-1 fig-node-2" {
		t.Errorf("figures %q", got)
	}
	const vermillion = "#D55E00" // gonum writes the colour in capitals
	for i, want := range []struct {
		label  string
		marked bool
	}{
		{"default 1K float32 sum out-of-place per-op direct. median µs per operation (log) against the run, over 6 runs", true},
		{"default 64K float32 sum out-of-place per-op direct. median µs per operation (log) against the run, over 6 runs", false},
		{"node n1: runs that named it a suspect. runs named a suspect, so far against the run, over 6 runs", false},
		{"node n2: runs that named it a suspect. runs named a suspect, so far against the run, over 6 runs", true},
	} {
		if i >= len(figures) {
			break
		}
		if figures[i][3] != want.label {
			t.Errorf("%s: aria-label %q, want %q", figures[i][1], figures[i][3], want.label)
		}
		if got := strings.Contains(figures[i][2], vermillion); got != want.marked {
			t.Errorf("%s: marked %v, want %v", figures[i][1], got, want.marked)
		}
	}
	for _, want := range []string{`<meta http-equiv="Content-Security-Policy" content="default-src 'none';`, "<td>n2</td><td>6</td><td>2</td><td>0</td><td>3 6</td>",
		"<td>1.500</td>", "History of " + path + ": 6 runs"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if regexp.MustCompile(`(src|href)="(https?:)?//`).MatchString(page) {
		t.Error("the page links outside itself")
	}
	// A page is never written over a file that is not one.
	notes := filepath.Join(dir, "notes.html")
	os.WriteFile(notes, []byte("mine"), 0o644)
	if err := Command([]string{"-html", notes, path}, io.Discard, io.Discard); err == nil {
		t.Error("a file that is not a page was replaced")
	}
	if data, _ := os.ReadFile(notes); string(data) != "mine" {
		t.Errorf("notes.html now holds %q", data)
	}
	// The -overwrite the refusal names exists, and replaces it.
	var stderr2 strings.Builder
	if err := Command([]string{"-html", notes, path}, io.Discard, &stderr2); err == nil || !strings.Contains(err.Error(), "-overwrite") {
		t.Errorf("the refusal does not name -overwrite: %v", err)
	}
	if err := Command([]string{"-html", notes, "-overwrite", path}, io.Discard, io.Discard); err != nil {
		t.Errorf("-overwrite: %v", err)
	}
	if data, _ := os.ReadFile(notes); !strings.Contains(string(data), "<html") {
		t.Errorf("-overwrite did not replace notes.html: %.40q", data)
	}
}

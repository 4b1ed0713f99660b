package page

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"rsag/outdir"
)

// edited is a copy of the smoke run's dir whose summary.json edit has
// changed; it returns the dir.
func edited(t *testing.T, edit func(doc map[string]any)) string {
	t.Helper()
	dir := runDir(t, "smoke-summary.json")
	path := filepath.Join(dir, "summary.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func timing(doc map[string]any) []any { return doc["timing"].([]any) }

// Issue 34 class 1: -html never writes over a file rsag did not write, nor
// over the summary.json it reads, even with -overwrite; a page rsag wrote
// is replaced; -overwrite replaces anything else.
func TestReportHTMLKeepsFilesItDidNotWrite(t *testing.T) {
	dir := runDir(t, "smoke-summary.json")
	summary := filepath.Join(dir, "summary.json")
	before, _ := os.ReadFile(summary)
	for _, args := range [][]string{{"-html", summary, dir}, {"-html", summary, "-overwrite", summary}} {
		code, _, stderr := command(args...)
		if code != ExitBadInput || !strings.Contains(stderr, "which this command reads") {
			t.Errorf("%v: exit %d, stderr %q; want a refusal naming the input", args, code, stderr)
		}
	}
	if after, _ := os.ReadFile(summary); string(after) != string(before) {
		t.Fatal("the summary.json read was written over")
	}
	notes := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notes, []byte("my notes"), 0o644)
	code, _, stderr := command("-html", notes, dir)
	if code != ExitBadInput || !strings.Contains(stderr, "is not a page rsag wrote") || !strings.Contains(stderr, "-overwrite") {
		t.Errorf("a user's file: exit %d, stderr %q", code, stderr)
	}
	if data, _ := os.ReadFile(notes); string(data) != "my notes" {
		t.Fatal("a user's file was written over")
	}
	// A page rsag wrote is replaced, the run's own report.html too.
	for range 2 {
		if code, _, stderr := command("-html", filepath.Join(filepath.Dir(notes), "page.html"), dir); code != ExitOK {
			t.Fatalf("writing a page twice: exit %d: %s", code, stderr)
		}
		if code, _, stderr := command(dir); code != ExitOK {
			t.Fatalf("report.html twice: exit %d: %s", code, stderr)
		}
	}
	if code, _, stderr := command("-overwrite", "-html", notes, dir); code != ExitOK {
		t.Fatalf("-overwrite: exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(notes); !IsPage(data) {
		t.Error("-overwrite did not write the page")
	}
	// A report.html in DIR that is not rsag's is kept too.
	other := runDir(t, "smoke-summary.json")
	os.WriteFile(filepath.Join(other, File), []byte("<html>someone's own</html>"), 0o644)
	if code, _, _ := command(other); code != ExitBadInput {
		t.Errorf("a foreign report.html in DIR: exit %d, want %d", code, ExitBadInput)
	}
}

// Issue 34 class 8: rsag report reads its input as compare does: a FIFO
// or a device is refused at once, by its kind.
func TestReportInputIsBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "summary.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "summary.json")
	os.Symlink("/dev/zero", link)
	for _, c := range []struct{ path, want string }{
		{dir, "it is a named pipe (FIFO), not a file rsag wrote"},
		{"/dev/zero", "it is a character device, not a file rsag wrote"},
		{link, "it is a character device, not a file rsag wrote"},
	} {
		done := make(chan struct{})
		var code int
		var stderr string
		go func() {
			code, _, stderr = command("-html", filepath.Join(t.TempDir(), "p.html"), c.path)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatalf("rsag report %s did not return within 20 s", c.path)
		}
		if code != ExitBadInput || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", c.path, code, stderr, c.want)
		}
	}
}

// Issue 34 class 10: a string of summary.json reaches the terminal with
// its controls escaped.
func TestReportEscapesTheTerminal(t *testing.T) {
	dir := edited(t, func(doc map[string]any) {
		doc["contracts"].([]any)[0].(map[string]any)["name"] = "evil\x1b]0;owned\x07\rFAILED"
		doc["ranks"].([]any)[0].(map[string]any)["host"] = "host\x1b[2J"
	})
	code, stdout, stderr := command(dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.ContainsAny(stdout+stderr, "\x1b\x07\r") {
		t.Errorf("a control character reached the terminal:\n%q", stdout)
	}
	if !strings.Contains(stdout, `evil\x1b]0;owned\x07\rFAILED`) {
		t.Errorf("the escaped name is not shown:\n%s", stdout)
	}
}

// Issue 34 class 11: numbers no run writes are refused, naming the case
// and the field, not drawn as a green page.
func TestReportRefusesImpossibleNumbers(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(doc map[string]any)
		want string
	}{
		{"negative time", func(d map[string]any) { timing(d)[0].(map[string]any)["min_us"] = -3.0 }, "has a min of -3 us"},
		{"samples -5", func(d map[string]any) { timing(d)[0].(map[string]any)["samples"] = -5 }, "has samples -5"},
		{"1e308", func(d map[string]any) {
			for _, k := range []string{"median_us", "p90_us", "p99_us", "max_us"} {
				timing(d)[0].(map[string]any)[k] = 1e308
			}
		}, "has a median of 1e+308 us"},
		{"out of order", func(d map[string]any) { timing(d)[0].(map[string]any)["p10_us"] = 1e6 }, "not in order"},
		{"negative busbw", func(d map[string]any) { timing(d)[0].(map[string]any)["busbw_gbps"] = -1.0 }, "busbw_gbps -1"},
		{"held on too many", func(d map[string]any) { d["contracts"].([]any)[0].(map[string]any)["held_on"] = 99 }, "held on 99 ranks of 2"},
	} {
		dir := edited(t, c.edit)
		code, _, stderr := command(dir)
		if code != ExitBadInput || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "damaged or edited") {
			t.Errorf("%s: exit %d, stderr %q; want %q", c.name, code, stderr, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, File)); err == nil {
			t.Errorf("%s: a page was written", c.name)
		}
	}
}

// Issue 34 class 3: the banner is derived from the rows and run.json, not
// from checks_passed alone.
func TestTheBannerFollowsTheRows(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(doc map[string]any)
		run   string // run.json's status beside it, "" for none
		check string
	}{
		{"every contract failed", func(d map[string]any) {
			for _, x := range d["contracts"].([]any) {
				x.(map[string]any)["held_on"] = 0
				x.(map[string]any)["failed_ranks"] = []int{0, 1}
			}
		}, "", "contracts"},
		{"every timing case wrong", func(d map[string]any) {
			for _, x := range timing(d) {
				x.(map[string]any)["correct"] = false
			}
		}, "", "timing results"},
		{"run.json says failed", func(map[string]any) {}, outdir.StatusFailed, "the run did not complete"},
		{"run.json says running", func(map[string]any) {}, outdir.StatusRunning, "the run did not complete"},
	} {
		dir := edited(t, c.edit)
		if c.run != "" {
			var head struct{ Started string }
			data, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
			json.Unmarshal(data, &head)
			if err := outdir.WriteRecord(dir, outdir.Record{Status: c.run, Reason: "killed by a signal", Started: head.Started}); err != nil {
				t.Fatal(err)
			}
		}
		code, stdout, stderr := command(dir)
		if code != ExitOK {
			t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
		}
		data, _ := os.ReadFile(filepath.Join(dir, File))
		page := string(data)
		if !strings.Contains(page, `data-verdict="failed"`) || !strings.Contains(page, "FAILED: ") || !strings.Contains(page, c.check) {
			t.Errorf("%s: the banner is not failed naming %q", c.name, c.check)
		}
		if !strings.Contains(stdout, "the run FAILED") {
			t.Errorf("%s: the closing line does not say FAILED:\n%s", c.name, stdout)
		}
	}
}

// Issue 34 class 4: under timing.check = "last" the banner says only the
// last sample was checked, and how many were not.
func TestTheBannerSaysWhatWasChecked(t *testing.T) {
	dir := edited(t, func(d map[string]any) {
		for _, x := range timing(d) {
			x.(map[string]any)["unchecked_samples"] = 6
		}
	})
	if code, _, stderr := command(dir); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(filepath.Join(dir, File))
	page := string(data)
	if strings.Contains(page, "every sample of the") || !strings.Contains(page, "only the last sample of each mode was checked") ||
		!strings.Contains(page, "were not checked") {
		t.Error("the banner of a check = \"last\" run claims every sample was checked")
	}
}

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rsag/report"
)

// A run whose sizes allow no fit writes null, not 0, for the fit's
// numbers, with the reason, in a summary.json of schema version 2; rsag
// compare and rsag report read it, and a version-1 copy of it (0 where 2
// has null) alike.
func TestANoFitIsNullAndBothVersionsAreRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := inproc(t, 2, time.Minute, append(append([]string{"-output-dir", dir}, smoke...),
		"-set", "timing.sizes_bytes=[3360]", "-set", "memory.enabled=false")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		SchemaVersion int              `json:"schema_version"`
		Fits          []map[string]any `json:"fits"`
		Crossover     []map[string]any `json:"crossover"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.SchemaVersion != report.SummarySchemaVersion || len(raw.Fits) != 2 || len(raw.Crossover) != 1 {
		t.Fatalf("schema_version %d, %d fits, %d crossovers; want %d, one fit per mode, one crossover", raw.SchemaVersion, len(raw.Fits), len(raw.Crossover), report.SummarySchemaVersion)
	}
	for _, f := range raw.Fits {
		for _, k := range []string{"alpha_us", "bandwidth_gbps", "r2", "max_rel_residual"} {
			if v, ok := f[k]; !ok || v != nil {
				t.Errorf("fit of %v: %s is %v (present %v); want null", f["mode"], k, v, ok)
			}
		}
		if why, _ := f["reason"].(string); !strings.Contains(why, "a fit needs at least 3") {
			t.Errorf("fit of %v: reason %q", f["mode"], why)
		}
	}
	if c := raw.Crossover[0]; c["extra_latency_us"] != nil || c["bandwidth_ratio"] != nil || c["from_fits"] != false {
		t.Errorf("crossover without fits: %v; want null numbers", c)
	}
	// The same summary as version 1 wrote it, copied with its samples (the
	// judge's input) and without its run.json.
	v1 := t.TempDir()
	old := strings.ReplaceAll(strings.Replace(string(data), `"schema_version": 4`, `"schema_version": 1`, 1), "null", "0")
	timings, err := os.ReadFile(filepath.Join(dir, "timings.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if os.WriteFile(filepath.Join(v1, report.SummaryFile), []byte(old), 0o644) != nil || os.WriteFile(filepath.Join(v1, "timings.csv"), timings, 0o644) != nil {
		t.Fatal("copying the run")
	}
	for _, args := range [][]string{
		{"compare", v1, dir},
		{"compare", dir, v1},
		{"report", "-html", filepath.Join(t.TempDir(), "v1.html"), v1},
		{"report", "-html", filepath.Join(t.TempDir(), "v2.html"), dir},
	} {
		out, err := exec.Command(rsagBin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("rsag %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

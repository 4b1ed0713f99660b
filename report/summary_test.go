package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"rsag/coll"
	"rsag/internal/testkit/schemacheck"
	"rsag/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const schemaPath = "../docs/summary.schema.json"

// fixedSummary is a summary built from fixed rows: two ranks on two hosts,
// one failed contract on rank 1, timing from statRows, two memory modes
// (one without a device count).
func fixedSummary() Summary {
	var rows Rows
	for r := 0; r < 2; r++ {
		host := []string{"a", "b"}[r]
		rows.Contracts = append(rows.Contracts,
			ContractRow{Rank: r, Name: "exact-sum-equivalence", Correct: true, Host: host},
			ContractRow{Rank: r, Name: "wrong-shard-order-rejected", Correct: r == 0, Host: host})
		rows.Memory = append(rows.Memory,
			MemoryRow{Rank: r, Mode: "allreduce-full", PayloadBytes: 1024, SteadyDeltaBytes: 1024, PeakDeltaBytes: 1024,
				Correct: true, Host: host, AnalyticSteady: 1024, AnalyticPeak: 1024, DeviceSteadyDelta: 2048, DevicePeakDelta: 4096},
			MemoryRow{Rank: r, Mode: "reduce-scatter-shard", PayloadBytes: 1024, SteadyDeltaBytes: 512, PeakDeltaBytes: 1536,
				Correct: true, Host: host, AnalyticSteady: 512, AnalyticPeak: 1536, DeviceSteadyDelta: -1, DevicePeakDelta: -1})
	}
	rows.Timings = statRows()
	return NewSummary(SummaryInput{
		Version: "v1.2.3", Commit: "abc1234", Status: "complete",
		Started: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Ended: time.Date(2026, 11, 29, 10, 1, 30, 0, time.UTC),
		Config:     map[string]any{"backend": "nccl", "timing": map[string]any{"cycles": 4, "sizes_bytes": []int{1048576}}},
		MPILibrary: "Open MPI v4.1.4",
		Infos: []coll.Info{
			{Backend: "nccl", Host: "a", Device: "NVIDIA H200", BusID: "0000:19:00.0", Driver: "12.8",
				Libraries: []coll.Library{{Name: "nccl", Path: "/usr/lib/libnccl.so.2", Version: "2.26.2"}}},
			{Backend: "nccl", Host: "b", Device: "NVIDIA H200", BusID: "0000:3b:00.0", Driver: "12.8"},
		},
		Environ: []string{"HOME=/root", "NCCL_DEBUG=INFO", "UCX_NET_DEVICES=mlx5_0:1", "XNCCL_NOT=1", "NCCL_ALGO=Ring"},
		Rows:    rows, World: 2, Discard: map[string]int{"default": 1, "other": 3},
	})
}

func TestSummaryGolden(t *testing.T) {
	var b bytes.Buffer
	if err := EncodeSummary(&b, fixedSummary()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "summary.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./report -run Golden -update)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("summary.json differs from %s (if intended, rerun with -update and review the diff):\n%s",
			golden, firstDifference(string(want), b.String()))
	}
}

func TestSummaryFields(t *testing.T) {
	s := fixedSummary()
	if s.Backend != "nccl" || s.Driver != "12.8" || len(s.Libraries) != 1 || s.Libraries[0].Version != "2.26.2" {
		t.Errorf("rank 0's backend description: %+v", s)
	}
	if len(s.Ranks) != 2 || s.Ranks[1] != (SummaryRank{Rank: 1, Host: "b", Device: "NVIDIA H200", BusID: "0000:3b:00.0"}) {
		t.Errorf("ranks: %+v", s.Ranks)
	}
	wantEnv := map[string]string{"NCCL_DEBUG": "INFO", "UCX_NET_DEVICES": "mlx5_0:1", "NCCL_ALGO": "Ring"}
	if !reflect.DeepEqual(s.Environment, wantEnv) {
		t.Errorf("environment = %v, want %v", s.Environment, wantEnv)
	}
	wantC := []SummaryContract{{"exact-sum-equivalence", 2, []int{}, ""}, {"wrong-shard-order-rejected", 1, []int{1}, ""}}
	if !reflect.DeepEqual(s.Contracts, wantC) {
		t.Errorf("contracts = %+v, want %+v", s.Contracts, wantC)
	}
	if s.ChecksPassed {
		t.Error("a failed contract (and a False timing sample) must fail checks_passed")
	}
	if len(s.Timing) != 2 || len(s.Ratios) != 1 || s.Ratios[0].Ratio != 1.5 {
		t.Errorf("timing %d cases, ratios %+v", len(s.Timing), s.Ratios)
	}
	m := s.Memory
	if len(m) != 2 || !m[0].MatchesAnalytic || len(m[0].Ranks) != 2 || *m[0].Ranks[1].DevicePeakDeltaBytes != 4096 ||
		m[1].Ranks[0].DeviceSteadyDeltaBytes != nil {
		t.Errorf("memory: %+v", m)
	}
}

func compileSchema(t *testing.T) *schemacheck.Schema {
	t.Helper()
	sch, err := schemacheck.Load(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

func validate(t *testing.T, sch *schemacheck.Schema, data []byte) error {
	t.Helper()
	return sch.Validate(data)
}

// The schema has additionalProperties/unevaluatedProperties false and names
// every field required, so a field added to or removed from the structs
// without the schema fails here.
func TestSummaryValidatesAgainstTheSchema(t *testing.T) {
	sch := compileSchema(t)
	for name, s := range map[string]Summary{
		"fixed":         fixedSummary(),
		"failed":        func() Summary { s := fixedSummary(); s.Status, s.Reason = "failed", "contracts failed"; return s }(),
		"empty":         NewSummary(SummaryInput{Status: "failed", Reason: "no backend", World: 2}),
		"with verdicts": func() Summary { s := fixedSummary(); v := VerdictsOf(s); s.Verdict = &v; return s }(),
	} {
		var b bytes.Buffer
		if err := EncodeSummary(&b, s); err != nil {
			t.Fatal(err)
		}
		if err := validate(t, sch, b.Bytes()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		// Readers that decode strictly into the documented struct lose nothing.
		dec := json.NewDecoder(bytes.NewReader(b.Bytes()))
		dec.DisallowUnknownFields()
		var back Summary
		if err := dec.Decode(&back); err != nil {
			t.Errorf("%s: strict decode: %v", name, err)
		}
	}
}

func TestSchemaRejectsWhatItShould(t *testing.T) {
	sch := compileSchema(t)
	var b bytes.Buffer
	if err := EncodeSummary(&b, fixedSummary()); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(map[string]any){
		"version 5":        func(m map[string]any) { m["schema_version"] = 5 },
		"alpha a string":   func(m map[string]any) { m["fits"].([]any)[0].(map[string]any)["alpha_us"] = "0" },
		"no timing":        func(m map[string]any) { delete(m, "timing") },
		"unknown field":    func(m map[string]any) { m["extra"] = true },
		"bad status":       func(m map[string]any) { m["status"] = "running" },
		"bad time":         func(m map[string]any) { m["started"] = "yesterday" },
		"stat extra field": func(m map[string]any) { m["timing"].([]any)[0].(map[string]any)["p50_us"] = 1 },
		"stat no median":   func(m map[string]any) { delete(m["timing"].([]any)[0].(map[string]any), "median_us") },
		"ratio no run":     func(m map[string]any) { delete(m["ratios"].([]any)[0].(map[string]any), "run") },
		"env not network":  func(m map[string]any) { m["environment"].(map[string]any)["HOME"] = "/root" },
	} {
		var m map[string]any
		if err := json.Unmarshal(b.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		data, _ := json.Marshal(m)
		if validate(t, sch, data) == nil {
			t.Errorf("%s: the schema accepted it", name)
		}
	}
}

func TestWriteAndReadSummary(t *testing.T) {
	dir := t.TempDir()
	s := fixedSummary()
	if err := WriteSummary(dir, s); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != SummaryFile {
		t.Errorf("want only %s, got %v", SummaryFile, entries)
	}
	path := filepath.Join(dir, SummaryFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummary(path, data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Timing, s.Timing) || back.RSAG != s.RSAG || back.Status != "complete" {
		t.Errorf("round trip lost data: %+v", back)
	}
	for name, c := range map[string]struct{ data, want string }{
		"not json":   {"{", "not a summary.json"},
		"no version": {`{"status":"complete"}`, "no schema_version"},
		"version 5":  {`{"schema_version":5}`, "schema_version 5, but this rsag reads versions 1, 2, 3 and 4"},
		"bad field":  {`{"schema_version":1,"timing":"x"}`, "cannot unmarshal"},
	} {
		_, err := ReadSummary("x/summary.json", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "x/summary.json") {
			t.Errorf("%s: err = %v, want the file and %q", name, err, c.want)
		}
	}
}

func TestConfigObject(t *testing.T) {
	type timing struct {
		Sizes  []int64 `toml:"sizes_bytes"`
		Cycles int     `toml:"cycles"`
	}
	type run struct {
		Name string `toml:"name"`
		timing
	}
	type raw struct{ x int }
	cfg := struct {
		Backend  string   `toml:"backend"`
		Timing   timing   `toml:"timing"`
		Tables   []raw    `toml:"run" json:"-"`
		Runs     []run    `toml:"-" json:"runs"`
		Skipped  int      `toml:"-"`
		Modes    []string `toml:"modes"`
		Ratio    float64  `toml:"ratio"`
		internal int
	}{Backend: "auto", Timing: timing{[]int64{1024, 1 << 20}, 10}, Tables: []raw{{1}},
		Runs: []run{{"a", timing{[]int64{64}, 5}}}, Skipped: 3, Ratio: 1.5}
	obj, err := ConfigObject(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(obj)
	want := `{"backend":"auto","modes":[],"ratio":1.5,"runs":[{"cycles":5,"name":"a","sizes_bytes":[64]}],` +
		`"timing":{"cycles":10,"sizes_bytes":[1024,1048576]}}`
	if string(data) != want {
		t.Errorf("ConfigObject =\n %s\nwant\n %s", data, want)
	}
	if _, err := ConfigObject(3); err == nil {
		t.Error("a non-struct config must be an error")
	}
}

// firstDifference names the first line where two texts differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, a, b)
		}
	}
	return "(same lines)"
}

// Typed names (a dtype, an op) appear in the config object as the config
// spells them, not as the integers they are stored as.
func TestConfigObjectWritesNames(t *testing.T) {
	cfg := struct {
		DTypes []coll.DType `toml:"dtypes"`
		Op     coll.Op      `toml:"op"`
		Mode   coll.Mode    `toml:"mode"`
		Count  int          `toml:"count"`
	}{[]coll.DType{coll.Float32, coll.Int8}, coll.Max, coll.Decomposed, 3}
	obj, err := ConfigObject(cfg)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(obj)
	if want := `{"count":3,"dtypes":["float32","int8"],"mode":"decomposed","op":"max"}`; string(data) != want {
		t.Errorf("ConfigObject = %s, want %s", data, want)
	}
}

// The schema names every timed mode phases has: a mode added to phases
// must be documented there too.
func TestSchemaKnowsEveryMode(t *testing.T) {
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum []string `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	got := doc.Defs["timing_stat"].Properties["mode"].Enum
	want := make([]string, len(coll.Modes))
	for i, m := range coll.Modes {
		want[i] = string(m)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the schema's timing modes are %v, phases has %v: document the new mode in docs/summary.schema.json and docs/summary-schema.md", got, want)
	}
}

// A fit that is not there is null in version 2, with its reason, and 0 in
// version 1: both read back as the same fit, with no numbers and the
// reason; a usable fit keeps its numbers.
func TestNoFitIsNullAndVersionOneStillReads(t *testing.T) {
	s := fixedSummary()
	var b bytes.Buffer
	if err := EncodeSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Fits      []map[string]any `json:"fits"`
		Crossover []map[string]any `json:"crossover"`
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if len(raw.Fits) == 0 || len(raw.Crossover) == 0 {
		t.Fatal("the fixture has no fit or crossover to look at")
	}
	for _, f := range raw.Fits {
		for _, k := range []string{"alpha_us", "bandwidth_gbps", "r2", "max_rel_residual"} {
			if v, ok := f[k]; !ok || v != nil || f["reason"] == "" {
				t.Errorf("a fit that is not there: %s = %v (present %v), reason %q; want null and a reason", k, v, ok, f["reason"])
			}
		}
	}
	for _, c := range raw.Crossover {
		if c["from_fits"] == false && (c["extra_latency_us"] != nil || c["bandwidth_ratio"] != nil) {
			t.Errorf("a crossover without fits: %v", c)
		}
	}
	v2, err := ReadSummary("v2/summary.json", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	v1data := strings.ReplaceAll(strings.Replace(b.String(), `"schema_version": 4`, `"schema_version": 1`, 1), "null", "0")
	v1, err := ReadSummary("v1/summary.json", []byte(v1data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v1.Fits, v2.Fits) || !reflect.DeepEqual(v1.Crossover, v2.Crossover) || !reflect.DeepEqual(v2.Fits, s.Fits) {
		t.Errorf("version 1 and 2 read differently:\nv1 %+v\nv2 %+v\nwritten %+v", v1.Fits, v2.Fits, s.Fits)
	}
	good := model.Fit{Case: coll.Case{Run: "r", DType: coll.Float32, Op: coll.Sum, Placement: coll.OutOfPlace, Method: coll.PerOp,
		Batch: 1, Buffers: coll.PlainBuffers, CTAPolicy: coll.DefaultCTAPolicy, Mode: coll.Direct}, AlphaUS: 2, BandwidthGBps: 10, R2: 0.99, SizesBytes: []int64{1, 16, 256}}
	data, _ := json.Marshal(good)
	var back model.Fit
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, good) {
		t.Errorf("a usable fit: %s read back as %+v, %v", data, back, err)
	}
}

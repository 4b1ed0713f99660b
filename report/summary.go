package report

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"

	"rsag/coll"
	"rsag/internal/rankset"
	"rsag/model"
)

// SummaryFile is rank 0's machine-readable record of a run: what ran, where,
// and the statistics of every case. docs/summary-schema.md documents every
// field and docs/summary.schema.json is its JSON Schema; a change that is not
// an addition of an optional field raises SummarySchemaVersion.
const SummaryFile = "summary.json"

// summary.json registers itself: the last of a run's files, once its
// status is known, written just before run.json says it (see Last).
func init() {
	Register(Output{Stage: Last, Patterns: []string{SummaryFile}, Ended: true, Plan: func(in Input) ([]string, func(string) error) {
		return []string{SummaryFile}, func(dir string) error { return WriteSummary(dir, *in.Summary) }
	}})
}

// SummarySchemaVersion is summary.json's schema_version. Version 2 writes
// null, not 0, for the numbers of a fit that is not there (fits[]) and of
// a crossover without two fits (crossover[]). Version 3 says whether a
// breakdown's time splits (breakdown[].shares[].split, why) and writes null
// for the shares that noise makes impossible, and adds the locate phase's
// verdict, intermittent units and inconclusive steps. Version 4 lists the
// phases that ran (phases[]), with how long each took and the table of a
// phase that has one of its own.
const SummarySchemaVersion = 4

// ReadsSchemaVersions are the versions ReadSummary reads: version 1's
// zeros where version 2 has null read as the same zeros, with the reason
// or from_fits saying there is no number; before version 3 a breakdown's
// split is "" and its shares are printed as they were written.
var ReadsSchemaVersions = []int{1, 2, 3, 4}

// Summary is summary.json. Field order is the file's key order.
type Summary struct {
	SchemaVersion int          `json:"schema_version"`
	RSAG          SummaryBuild `json:"rsag"`
	Status        string       `json:"status"`           // "complete" or "failed"
	Reason        string       `json:"reason,omitempty"` // why it failed
	// EndedEarly says the run was ended before its results were gathered
	// (end_on_stuck_rank, the watchdog, a signal): rank 0 wrote this file
	// from what it knew then, its sections hold no results, and each
	// phase the config enabled is not run, for Reason (VerdictsOf).
	EndedEarly bool   `json:"ended_early,omitempty"`
	Started    string `json:"started"` // RFC 3339, UTC
	Ended      string `json:"ended"`   // RFC 3339, UTC
	// Config is the resolved config (after -set and -backend) as a JSON
	// object; ConfigObject turns a TOML-tagged struct into one.
	Config      any               `json:"config"`
	Backend     string            `json:"backend"`
	WorldSize   int               `json:"world_size"`
	MPILibrary  string            `json:"mpi_library"`
	Libraries   []SummaryLibrary  `json:"libraries"` // rank 0's
	Driver      string            `json:"driver"`    // rank 0's CUDA driver, "" without one
	Ranks       []SummaryRank     `json:"ranks"`
	Nodes       []SummaryNode     `json:"nodes"`             // the ranks grouped by host
	Environment map[string]string `json:"environment"`       // rank 0's NCCL_* and UCX_* variables
	Command     []string          `json:"command,omitempty"` // rank 0's command line (os.Args)
	Contracts   []SummaryContract `json:"contracts"`
	Timing      []TimingStat      `json:"timing"`
	Ratios      []Ratio           `json:"ratios"`
	// Fits is the Hockney model t(n) = alpha + n/B of every case and mode
	// over its sizes; Crossover and Breakdown compare each decomposition of
	// AllReduce with direct and split its time between its parts.
	Fits      []model.Fit        `json:"fits"`
	Crossover []SummaryCrossover `json:"crossover"`
	Breakdown []SummaryBreakdown `json:"breakdown"`
	Memory    []SummaryMemory    `json:"memory"`
	// Numerics is the numerics phase, one entry per dtype and size;
	// empty when it did not run.
	Numerics []SummaryNumerics `json:"numerics"`
	// ChecksPassed is whether every contract, timing check and memory check
	// held on every rank.
	ChecksPassed bool `json:"checks_passed"`
	// Locate is the locate phase: its figures and suspects; absent when
	// it did not run.
	Locate *SummaryLocate `json:"locate,omitempty"`
	// Soak is the soak phase; absent when it did not run.
	Soak *SummarySoak `json:"soak,omitempty"`
	// GPUShared says that ranks shared a GPU (coll.SharedGPUNote), and
	// what that means for the timings; absent when none did.
	GPUShared string `json:"gpu_shared,omitempty"`
	// Phases are the phases that ran, in order (schema 4).
	Phases []SummaryPhase `json:"phases"`
	// Verdict is the run's one list of verdicts (VerdictsOf), computed
	// once at the end of the run; a summary read back has it computed
	// again from its sections (ReadSummary), so that an edited list cannot
	// contradict them.
	Verdict *Verdicts `json:"verdict,omitempty"`
}

// SummaryBuild names the rsag binary that ran.
type SummaryBuild struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// SummaryLibrary is a shared library the backend loaded.
type SummaryLibrary struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Path    string `json:"path"` // "" when linked at build time
}

// SummaryRank is where one rank ran.
type SummaryRank struct {
	Rank      int    `json:"rank"`
	Host      string `json:"host"`
	LocalRank int    `json:"local_rank"` // among the ranks on its host
	Device    string `json:"device"`
	BusID     string `json:"bus_id"`
}

// SummaryNode is one host and the ranks that ran on it.
type SummaryNode struct {
	Host       string `json:"host"`
	Ranks      []int  `json:"ranks"`       // world ranks, ascending
	LocalRanks []int  `json:"local_ranks"` // each one's node-local rank, in the same order
	Device     string `json:"device"`      // the ranks' devices: the distinct names, joined by ", "
	// Groups is each rank's group of the hierarchical decomposition, in
	// the same order; absent when [hierarchy] is off.
	Groups []int `json:"groups,omitempty"`
	// Crowded says, when the node's ranks outnumber the processors they
	// may run on between them, by how much: "4 ranks on 2 processors".
	// Its ranks then take turns on the processors, and the timings measure
	// that as much as the collectives. Absent otherwise, or when unknown.
	Crowded string `json:"crowded,omitempty"`
	// Waited says, when a rank of the node sat runnable but not running
	// for WaitedShare of the timing phase or more (schedstat's run_delay),
	// which and how long: "rank 1 waited 31% of the timing phase for a
	// processor". Ranks no more than the processors still take turns with
	// whatever else runs there (another job, a CPU hog), and the timings
	// measure that too. Absent otherwise, or when unknown (WithWaits).
	Waited string `json:"waited,omitempty"`
}

// CrowdedNote says which nodes' ranks outnumbered their processors, or
// waited for them, and what that does to the timings, "" when none did.
func CrowdedNote(nodes []SummaryNode) string {
	var shared, waited, notes []string
	for _, n := range nodes {
		if n.Crowded != "" {
			shared = append(shared, n.Host+": "+n.Crowded)
		}
		if n.Waited != "" {
			waited = append(waited, n.Host+": "+n.Waited)
		}
	}
	if len(shared) > 0 {
		notes = append(notes, "ranks share processors ("+strings.Join(shared, "; ")+"): the timings measure their turn-taking too")
	}
	if len(waited) > 0 {
		notes = append(notes, "ranks waited for processors ("+strings.Join(waited, "; ")+"): the timings measure that waiting too")
	}
	return strings.Join(notes, "; ")
}

// CrowdedWhy is, in a few words each, why the nodes' timings measure more
// than the collectives (CrowdedNote at length): "ranks shared processors",
// "ranks waited for processors", both, or none.
func CrowdedWhy(nodes []SummaryNode) []string {
	var why []string
	if slices.ContainsFunc(nodes, func(n SummaryNode) bool { return n.Crowded != "" }) {
		why = append(why, "ranks shared processors")
	}
	if slices.ContainsFunc(nodes, func(n SummaryNode) bool { return n.Waited != "" }) {
		why = append(why, "ranks waited for processors")
	}
	return why
}

// WaitedShare is the share of the timing phase a rank may wait for a
// processor and its node not be said crowded. Measured on the 2-core
// machine, 2 ranks of smoke (docs/history.md): quiet, a run's worst rank
// waited 11 to 29% (a phase of 30 to 45 ms, where Go's, MPI's and rsag's
// own threads take a slice now and then); beside one CPU hog, the rank that
// shared its processor with the hog 47 to 53%, and beside two 57 to 58%
// (an even turn with one busy loop is 50%). 35% lies between them, nearer
// the quiet side: a rank that waited a third of the phase measured its
// turns as much as its collective.
const WaitedShare = 0.35

// WithWaits says, on each node, which of its ranks waited for a processor
// WaitedShare of the timing phase or more (SummaryNode.Waited), from each
// rank's figures; a rank without a row is not known to have waited.
func WithWaits(nodes []SummaryNode, ranks []TimingRankRow) []SummaryNode {
	share := map[int]float64{}
	for _, r := range ranks {
		if r.Seconds > 0 {
			share[r.Rank] = r.WaitedS / r.Seconds
		}
	}
	for i := range nodes {
		nodes[i].Waited = ""
		var over []int
		most := 0.0
		for _, r := range nodes[i].Ranks {
			if s, ok := share[r]; ok && s >= WaitedShare {
				over = append(over, r)
				most = max(most, s)
			}
		}
		switch {
		case len(over) == 1:
			nodes[i].Waited = fmt.Sprintf("%s waited %.0f%% of the timing phase for a processor", rankset.Ranks(over), 100*most)
		case len(over) > 1:
			nodes[i].Waited = fmt.Sprintf("%s waited up to %.0f%% of the timing phase for a processor", rankset.Ranks(over), 100*most)
		}
	}
	return nodes
}

// WithGroups fills in each node's ranks' hierarchy groups: group[r] is
// rank r's (nil: no hierarchy).
func WithGroups(nodes []SummaryNode, group []int) []SummaryNode {
	if group == nil {
		return nodes
	}
	for i := range nodes {
		nodes[i].Groups = nil
		for _, r := range nodes[i].Ranks {
			nodes[i].Groups = append(nodes[i].Groups, group[r])
		}
	}
	return nodes
}

// Nodes groups the ranks by host, in the order of each host's first rank.
func Nodes(infos []coll.Info) []SummaryNode {
	var nodes []SummaryNode
	index := map[string]int{}
	for r, in := range infos {
		i, ok := index[in.Host]
		if !ok {
			i = len(nodes)
			index[in.Host] = i
			nodes = append(nodes, SummaryNode{Host: in.Host})
		}
		n := &nodes[i]
		n.Ranks = append(n.Ranks, r)
		n.LocalRanks = append(n.LocalRanks, in.LocalRank)
		if !slices.Contains(strings.Split(n.Device, ", "), in.Device) {
			n.Device = strings.TrimPrefix(n.Device+", "+in.Device, ", ")
		}
	}
	for i := range nodes {
		cpus := map[int]bool{}
		for _, r := range nodes[i].Ranks {
			for _, c := range infos[r].CPUs {
				cpus[c] = true
			}
		}
		if ranks := len(nodes[i].Ranks); len(cpus) > 0 && ranks > len(cpus) {
			nodes[i].Crowded = fmt.Sprintf("%d ranks on %d processor%s", ranks, len(cpus), map[bool]string{true: "s"}[len(cpus) > 1])
		}
	}
	return nodes
}

// SummaryContract is one contract over every rank.
type SummaryContract struct {
	Name        string `json:"name"`
	HeldOn      int    `json:"held_on"` // number of ranks
	FailedRanks []int  `json:"failed_ranks"`
	Detail      string `json:"detail"` // rank 0's detail: what the contract compared, or the refusal's message
}

// SummaryMemory is one memory mode over every rank.
type SummaryMemory struct {
	Mode                string              `json:"mode"`
	PayloadBytes        int64               `json:"payload_bytes"`
	AnalyticSteadyBytes int64               `json:"analytic_steady_bytes"`
	AnalyticPeakBytes   int64               `json:"analytic_peak_bytes"`
	MatchesAnalytic     bool                `json:"matches_analytic"` // on every rank, steady and peak
	Correct             bool                `json:"correct"`          // on every rank
	Ranks               []SummaryMemoryRank `json:"ranks"`
}

// SummaryMemoryRank is one memory mode on one rank. The device deltas are
// null when the backend has no device count (the MPI backend).
type SummaryMemoryRank struct {
	Rank                   int    `json:"rank"`
	Host                   string `json:"host"`
	BaselineBytes          int64  `json:"baseline_bytes"`
	SteadyDeltaBytes       int64  `json:"steady_delta_bytes"`
	PeakDeltaBytes         int64  `json:"peak_delta_bytes"`
	DeviceSteadyDeltaBytes *int64 `json:"device_steady_delta_bytes"`
	DevicePeakDeltaBytes   *int64 `json:"device_peak_delta_bytes"`
	Correct                bool   `json:"correct"`
}

// SummaryNumerics is one dtype and size of the numerics phase over every
// rank: each rank compared its own two outputs, element by element, with
// each other and with the exact sum; the figures are the worst over ranks.
type SummaryNumerics struct {
	DType                 string  `json:"dtype"`
	SizeBytes             int64   `json:"size_bytes"`
	Elements              int     `json:"elements"`
	Ranks                 int     `json:"ranks"`
	BitwiseEqual          bool    `json:"bitwise_equal"`      // on every rank
	DifferingElements     int     `json:"differing_elements"` // the most on any rank
	MaxULP                int64   `json:"max_ulp"`
	MaxAbsErrorDirect     float64 `json:"max_abs_error_direct"`
	MaxAbsErrorDecomposed float64 `json:"max_abs_error_decomposed"`
	MaxRelErrorDirect     float64 `json:"max_rel_error_direct"`
	MaxRelErrorDecomposed float64 `json:"max_rel_error_decomposed"`
	UnitRoundoff          float64 `json:"unit_roundoff"`
	Bound                 float64 `json:"bound"`
	MaxBoundRatio         float64 `json:"max_bound_ratio"`
	WithinBound           bool    `json:"within_bound"` // on every rank
}

// Verdict says in words how the two paths compare.
func (n SummaryNumerics) Verdict() string {
	if n.BitwiseEqual {
		return "bitwise equal"
	}
	return fmt.Sprintf("%d of %d elements differ, at most %d ULP", n.DifferingElements, n.Elements, n.MaxULP)
}

func summaryNumerics(rows []NumericsRow) []SummaryNumerics {
	type key struct {
		dtype string
		size  int64
	}
	var out []SummaryNumerics
	index := map[key]int{}
	for _, r := range rows {
		k := key{r.DType, r.SizeBytes}
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, SummaryNumerics{DType: r.DType, SizeBytes: r.SizeBytes, Elements: r.Elements,
				BitwiseEqual: true, WithinBound: true, UnitRoundoff: r.UnitRoundoff})
		}
		n := &out[i]
		n.Ranks++
		n.BitwiseEqual = n.BitwiseEqual && r.BitwiseEqual
		n.WithinBound = n.WithinBound && r.WithinBound
		n.DifferingElements = max(n.DifferingElements, r.DifferingElements)
		n.MaxULP = max(n.MaxULP, r.MaxULP)
		n.MaxAbsErrorDirect = max(n.MaxAbsErrorDirect, r.MaxAbsErrorDirect)
		n.MaxAbsErrorDecomposed = max(n.MaxAbsErrorDecomposed, r.MaxAbsErrorDecomposed)
		n.MaxRelErrorDirect = max(n.MaxRelErrorDirect, r.MaxRelErrorDirect)
		n.MaxRelErrorDecomposed = max(n.MaxRelErrorDecomposed, r.MaxRelErrorDecomposed)
		n.Bound = max(n.Bound, r.Bound)
		n.MaxBoundRatio = max(n.MaxBoundRatio, r.MaxBoundRatio)
	}
	return out
}

// SummaryInput is what rank 0 knows at the end of a run.
type SummaryInput struct {
	Version, Commit string
	Status, Reason  string
	Started, Ended  time.Time
	Config          any // a JSON object; see ConfigObject
	MPILibrary      string
	Infos           []coll.Info // every rank's, in rank order
	Environ         []string    // rank 0's os.Environ()
	Command         []string    // rank 0's os.Args
	Rows            Rows        // every rank's rows (Merge)
	World           int
	GroupSize       int   // the hierarchy's ranks per group; 0 without one
	Groups          []int // the hierarchy's group of each rank, by rank; nil without one
	// Phases are the phases that ran, in order, with how long each took
	// on rank 0.
	Phases []PhaseTime
	// Discard is each run's number of timing cycles dropped from the start
	// of each case (config's timing.discard, per [[run]]); missing: 0.
	Discard map[string]int
}

// NewSummary builds summary.json's content.
func NewSummary(in SummaryInput) Summary {
	s := Summary{SchemaVersion: SummarySchemaVersion, RSAG: SummaryBuild{in.Version, in.Commit},
		Status: in.Status, Reason: in.Reason,
		Started: in.Started.UTC().Format(time.RFC3339), Ended: in.Ended.UTC().Format(time.RFC3339),
		Config: in.Config, WorldSize: in.World, MPILibrary: in.MPILibrary,
		Environment: NetworkEnvironment(in.Environ), Command: in.Command}
	if len(in.Infos) > 0 {
		s.Backend, s.Driver = in.Infos[0].Backend, in.Infos[0].Driver
		for _, l := range in.Infos[0].Libraries {
			s.Libraries = append(s.Libraries, SummaryLibrary{l.Name, l.Version, l.Path})
		}
	}
	for r, in := range in.Infos {
		s.Ranks = append(s.Ranks, SummaryRank{Rank: r, Host: in.Host, LocalRank: in.LocalRank, Device: in.Device, BusID: in.BusID})
	}
	s.Nodes = WithWaits(WithGroups(Nodes(in.Infos), in.Groups), in.Rows.TimingRanks)
	s.GPUShared = coll.SharedGPUNote(in.Infos)
	s.Contracts = summaryContracts(in.Rows.Contracts)
	s.Timing = TimingStatsPerRun(in.Rows.Timings, coll.Layout{World: in.World, Group: in.GroupSize}, in.Discard)
	s.Ratios = Ratios(s.Timing)
	s.Fits, s.Crossover, s.Breakdown = FitsOf(s.Timing)
	s.Memory = summaryMemory(in.Rows.Memory)
	s.Numerics = summaryNumerics(in.Rows.Numerics)
	s.ChecksPassed = allCorrect(in.Rows)
	s.Soak = in.Rows.SoakSummary
	s.Phases = PhasesOf(in.Phases, in.Rows.Tables)
	return s
}

func summaryContracts(rows []ContractRow) []SummaryContract {
	var out []SummaryContract
	for _, name := range uniqueInOrder(rows, func(r ContractRow) string { return r.Name }) {
		c := SummaryContract{Name: name, FailedRanks: []int{}}
		for _, r := range rows {
			if r.Name != name {
				continue
			}
			if r.Correct {
				c.HeldOn++
			} else {
				c.FailedRanks = append(c.FailedRanks, r.Rank)
			}
			if r.Rank == 0 {
				c.Detail = r.Detail
			}
		}
		slices.Sort(c.FailedRanks)
		out = append(out, c)
	}
	return out
}

func summaryMemory(rows []MemoryRow) []SummaryMemory {
	var out []SummaryMemory
	for _, mode := range uniqueInOrder(rows, func(r MemoryRow) string { return r.Mode }) {
		var m *SummaryMemory
		for _, r := range rows {
			if r.Mode != mode {
				continue
			}
			if m == nil {
				m = &SummaryMemory{Mode: mode, PayloadBytes: r.PayloadBytes, AnalyticSteadyBytes: r.AnalyticSteady,
					AnalyticPeakBytes: r.AnalyticPeak, MatchesAnalytic: true, Correct: true}
			}
			mr := SummaryMemoryRank{Rank: r.Rank, Host: r.Host, BaselineBytes: r.BaselineBytes,
				SteadyDeltaBytes: r.SteadyDeltaBytes, PeakDeltaBytes: r.PeakDeltaBytes, Correct: r.Correct}
			// The backends report -1 when there is no device count.
			if r.DeviceSteadyDelta >= 0 {
				steady, peak := r.DeviceSteadyDelta, r.DevicePeakDelta
				mr.DeviceSteadyDeltaBytes, mr.DevicePeakDeltaBytes = &steady, &peak
			}
			m.Ranks = append(m.Ranks, mr)
			m.MatchesAnalytic = m.MatchesAnalytic && r.SteadyDeltaBytes == r.AnalyticSteady && r.PeakDeltaBytes == r.AnalyticPeak
			m.Correct = m.Correct && r.Correct
		}
		out = append(out, *m)
	}
	return out
}

func allCorrect(rows Rows) bool {
	for _, t := range rows.Tables {
		if t.Checks && len(t.Failed) > 0 {
			return false
		}
	}
	for _, r := range rows.Contracts {
		if !r.Correct {
			return false
		}
	}
	for _, r := range rows.Timings {
		if r.Correct == Wrong {
			return false
		}
	}
	for _, r := range rows.Memory {
		if !r.Correct {
			return false
		}
	}
	for _, r := range rows.Numerics {
		if !r.WithinBound {
			return false
		}
	}
	if s := rows.SoakSummary; s != nil && s.FailedIterations > 0 {
		return false
	}
	return true
}

// NetworkEnvironment picks the NCCL_* and UCX_* variables out of environ
// (os.Environ's form, KEY=value): they change what the network does, so a
// result without them cannot be reproduced.
func NetworkEnvironment(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (strings.HasPrefix(k, "NCCL_") || strings.HasPrefix(k, "UCX_")) {
			env[k] = v
		}
	}
	return env
}

// ConfigObject turns a config struct into a JSON object with the TOML
// file's keys: a field is named by its toml tag; one that TOML skips
// (toml:"-", e.g. the resolved runs) by its json tag; one tagged json:"-"
// (e.g. undecoded TOML) is left out; an embedded struct without a tag is
// flattened into its parent, as TOML does.
func ConfigObject(cfg any) (map[string]any, error) {
	v := reflect.ValueOf(cfg)
	for v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("config of type %T is not a struct", cfg)
	}
	obj := map[string]any{}
	configFields(v, obj)
	return obj, nil
}

func configFields(v reflect.Value, obj map[string]any) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tomlName, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		jsonName, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if jsonName == "-" {
			continue
		}
		name := tomlName
		if name == "-" {
			name = jsonName
		}
		if name == "-" || (name == "" && tomlName == "-") {
			continue
		}
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			configFields(v.Field(i), obj)
			continue
		}
		if name == "" {
			name = f.Name
		}
		obj[name] = configValue(v.Field(i))
	}
}

func configValue(v reflect.Value) any {
	// A typed name (coll.DType, coll.Op) is written as its name, as
	// the config spells it, not as the integer it is stored as.
	if v.Kind() != reflect.Pointer && v.Kind() != reflect.Interface && v.CanInterface() {
		if m, ok := v.Interface().(encoding.TextMarshaler); ok {
			if b, err := m.MarshalText(); err == nil {
				return string(b)
			}
		}
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return configValue(v.Elem())
	case reflect.Struct:
		obj := map[string]any{}
		configFields(v, obj)
		return obj
	case reflect.Slice, reflect.Array:
		out := make([]any, v.Len())
		for i := range out {
			out[i] = configValue(v.Index(i))
		}
		return out
	case reflect.Map:
		obj := map[string]any{}
		for _, k := range v.MapKeys() {
			obj[fmt.Sprint(k.Interface())] = configValue(v.MapIndex(k))
		}
		return obj
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.String:
		return v.String()
	}
	return fmt.Sprint(v.Interface())
}

// WriteSummary writes s as dir/summary.json atomically (a temporary file
// renamed into place). Empty lists are written as [], never null.
func WriteSummary(dir string, s Summary) error {
	return writeFile(filepath.Join(dir, SummaryFile), func(b *bytes.Buffer) error {
		return EncodeSummary(b, s)
	})
}

// EncodeSummary writes s as indented JSON.
func EncodeSummary(b *bytes.Buffer, s Summary) error {
	s = normalized(s)
	enc := json.NewEncoder(b)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// normalized replaces nil lists and maps with empty ones, so that readers
// (and the schema) never see null where a list belongs.
func normalized(s Summary) Summary {
	if s.Config == nil {
		s.Config = map[string]any{}
	}
	if s.Libraries == nil {
		s.Libraries = []SummaryLibrary{}
	}
	if s.Ranks == nil {
		s.Ranks = []SummaryRank{}
	}
	if s.Nodes == nil {
		s.Nodes = []SummaryNode{}
	}
	if s.Environment == nil {
		s.Environment = map[string]string{}
	}
	if s.Contracts == nil {
		s.Contracts = []SummaryContract{}
	}
	for i := range s.Contracts {
		if s.Contracts[i].FailedRanks == nil {
			s.Contracts[i].FailedRanks = []int{}
		}
	}
	if s.Timing == nil {
		s.Timing = []TimingStat{}
	}
	if s.Ratios == nil {
		s.Ratios = []Ratio{}
	}
	if s.Fits == nil {
		s.Fits = []model.Fit{}
	}
	for i := range s.Fits {
		if s.Fits[i].SizesBytes == nil {
			s.Fits[i].SizesBytes = []int64{}
		}
	}
	if s.Crossover == nil {
		s.Crossover = []SummaryCrossover{}
	}
	if s.Breakdown == nil {
		s.Breakdown = []SummaryBreakdown{}
	}
	if s.Memory == nil {
		s.Memory = []SummaryMemory{}
	}
	if s.Numerics == nil {
		s.Numerics = []SummaryNumerics{}
	}
	for i := range s.Memory {
		if s.Memory[i].Ranks == nil {
			s.Memory[i].Ranks = []SummaryMemoryRank{}
		}
	}
	if s.Locate != nil {
		l := normalizedLocate(*s.Locate)
		s.Locate = &l
	}
	if s.Soak != nil {
		soak := *s.Soak
		if soak.SuspectRanks == nil {
			soak.SuspectRanks = []int{}
		}
		if soak.Faults == nil {
			soak.Faults = []coll.StepFault{}
		}
		if soak.Failures == nil {
			soak.Failures = []SummarySoakFailed{}
		}
		if soak.NotDrawn == nil {
			soak.NotDrawn = []string{}
		}
		for i := range soak.Faults {
			if soak.Faults[i].Chunks == nil {
				soak.Faults[i].Chunks = []int{}
			}
		}
		s.Soak = &soak
	}
	if s.Verdict != nil {
		v := *s.Verdict
		v.Phases = slices.Clone(v.Phases)
		for i := range v.Phases {
			if v.Phases[i].Checks == nil {
				v.Phases[i].Checks = []Check{}
			}
		}
		s.Verdict = &v
	}
	s.Phases = slices.Clone(s.Phases)
	if s.Phases == nil {
		s.Phases = []SummaryPhase{}
	}
	for i, p := range s.Phases {
		if t := p.Table; t != nil {
			c := *t
			if c.Rows == nil {
				c.Rows = [][]string{}
			}
			if c.Failed == nil {
				c.Failed = []int{}
			}
			if c.Columns == nil {
				c.Columns = []string{}
			}
			s.Phases[i].Table = &c
		}
	}
	return s
}

// Table is an ASCII table in the style of rsag's own tables, for other
// packages' reporters (rsag compare).
func Table(w io.Writer, header ...string) *tablewriter.Table { return newTable(w, header...) }

// ReadSummary reads and checks a summary.json: it must be JSON of a
// schema version this rsag reads (ReadsSchemaVersions). Errors name the
// file.
func ReadSummary(path string, data []byte) (Summary, error) {
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Summary{}, fmt.Errorf("%s: not a summary.json: %w", path, err)
	}
	if head.SchemaVersion == nil {
		return Summary{}, fmt.Errorf("%s: no schema_version: not an rsag summary.json", path)
	}
	if !slices.Contains(ReadsSchemaVersions, *head.SchemaVersion) {
		return Summary{}, fmt.Errorf("%s: schema_version %d, but this rsag reads versions %s",
			path, *head.SchemaVersion, versionsText(ReadsSchemaVersions))
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return Summary{}, fmt.Errorf("%s: %w", path, err)
	}
	// Files from before buffers and cta_policy existed timed the baseline.
	for i := range s.Timing {
		baseline(&s.Timing[i].Case)
	}
	for i := range s.Ratios {
		baseline(&s.Ratios[i].Case)
	}
	for i := range s.Fits {
		baseline(&s.Fits[i].Case)
	}
	for i := range s.Crossover {
		baseline(&s.Crossover[i].Case)
	}
	for i := range s.Breakdown {
		baseline(&s.Breakdown[i].Case)
	}
	v := VerdictsOf(s)
	s.Verdict = &v
	return s, nil
}

// versionsText is "1 and 2", "1, 2 and 3".
func versionsText(vs []int) string {
	var s []string
	for _, v := range vs {
		s = append(s, fmt.Sprint(v))
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// baseline gives a case read from a file written before buffers and
// cta_policy existed the baseline's, which it timed.
func baseline(c *coll.Case) {
	if c.Buffers == "" {
		c.Buffers = coll.PlainBuffers
	}
	if c.CTAPolicy == "" {
		c.CTAPolicy = coll.DefaultCTAPolicy
	}
}

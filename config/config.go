// Package config reads rsag's TOML configuration: strict decoding (unknown
// keys, and known ones spelt in another case, are errors with the closest
// known key suggested), defaults in one place (Default), -set overrides
// through the same parser, every number checked against a documented bound
// (bounds.go), and validation against the world size before any collective
// runs. Parse resolves the timing runs once, into coll's own types.
package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"rsag/coll"
	"rsag/phases"
)

// Config is the whole run. Field tags are the TOML keys.
type Config struct {
	// Backend is "auto", "nccl" or "mpi".
	Backend string `toml:"backend"`
	// RequiredRanks, when set, is the exact world size the run needs (the
	// seed's chapter requires 4); 0 means any world size of at least 2.
	RequiredRanks int `toml:"required_ranks"`
	// TimeoutS is the watchdog's deadline in seconds for every collective
	// and every synchronisation: a rank that waits longer aborts the job,
	// naming what it waited for. 180 is the seed's process-group timeout.
	// It takes fractions (0.5): a test's hang ends in half a second.
	TimeoutS float64 `toml:"timeout_s"`
	// StartupTimeoutS bounds MPI's start-up (MPI_Init, and the agreements
	// up to the config's broadcast) when a -set gives it: MPI_Init across
	// thousands of nodes can take longer than any one collective may. 0:
	// timeout_s's. Only -set counts (StartupTimeout): the file is read
	// once MPI has started. It takes fractions, as timeout_s does.
	StartupTimeoutS float64 `toml:"startup_timeout_s"`
	// EndOnStuckRank ends the job as soon as a rank is known stopped or
	// gone while the others wait for it (docs/failure-behaviour.md), rather
	// than at timeout_s; off, the seed's behaviour: the rank is named early
	// and the watchdog ends the job.
	EndOnStuckRank bool `toml:"end_on_stuck_rank"`
	// MetricsDir, when set, is a directory where rank 0 writes rsag.prom
	// too (node_exporter's --collector.textfile.directory), atomically;
	// the output dir always has it.
	MetricsDir string `toml:"metrics_dir"`
	// RankFolderAbove is the world size above which every rank's own
	// files (rank{r}_*.csv) go into the output dir's ranks/ folder, so
	// that a fleet's run leaves the files a person opens on top; 0 puts
	// them there always. Smaller runs keep the seed's names and places.
	RankFolderAbove int `toml:"rank_folder_above"`
	// History, when set, is the history database (docs/history.md) that
	// rank 0 appends the run to once it has ended; -history and
	// RSAG_HISTORY, when given, come before it.
	History   string    `toml:"history"`
	Contracts Contracts `toml:"contracts"`
	Timing    Timing    `toml:"timing"`
	Memory    Memory    `toml:"memory"`
	Numerics  Numerics  `toml:"numerics"`
	Hierarchy Hierarchy `toml:"hierarchy"`
	Locate    Locate    `toml:"locate"`
	Soak      Soak      `toml:"soak"`
	GPU       GPU       `toml:"gpu"` // gpu.go
	// RunTables are the [[run]] tables, each a set of timing keys (and a
	// name) that override [timing]; Runs holds them resolved.
	RunTables []toml.Primitive `toml:"run" json:"-"`
	Runs      []RunTable       `toml:"-" json:"runs"`
	// Sweeps are Runs as the timing phase takes them, sizes expanded,
	// resolved once by Parse; nil when timing is disabled.
	Sweeps []coll.Sweep `toml:"-" json:"-"`
}

// Backends are the values of the backend key and the -backend flag.
var Backends = []string{"auto", "nccl", "mpi"}

// MemoryModes are the strategies the memory phase knows, in the seed's
// order followed by ours.
var MemoryModes = phases.MemoryModeNames()

// DefaultRankFolderAbove is rank_folder_above's default: 64 ranks, 192
// per-rank CSVs, about as many as a directory listing shows on a screen.
const DefaultRankFolderAbove = 64

// DefaultTimeoutS is the seed's process-group timeout (timedelta(seconds=180)).
const DefaultTimeoutS = 180

// Timeout is timeout_s as a duration: the watchdog's deadline.
func (c *Config) Timeout() time.Duration { return Seconds(c.TimeoutS) }

// Default is the seed's run: its five sizes, 3 warmups, 10 cycles and a
// 256 MiB memory payload, every phase of the seed's on and ours off.
func Default() Config {
	return Config{
		Backend:         "auto",
		TimeoutS:        DefaultTimeoutS,
		RankFolderAbove: DefaultRankFolderAbove,
		Contracts:       Contracts{Enabled: true},
		Timing: Timing{Enabled: true, Warmups: 3, Cycles: 10,
			SizesBytes: []Size{1024, 65536, 1048576, 16777216, 268435456},
			DTypes:     []coll.DType{coll.Float32}, Ops: []coll.Op{coll.Sum},
			Placements: []coll.Placement{coll.OutOfPlace}, Methods: []coll.Method{coll.PerOp},
			Modes: append([]coll.Mode(nil), coll.DefaultModes...), Buffers: []coll.BufferKind{coll.PlainBuffers},
			CTAPolicies: []coll.CTAPolicy{coll.DefaultCTAPolicy}, Offsets: []Size{0}, Batch: 20, Check: "every", MinBusBWStatistic: "median"},
		Memory:   Memory{Enabled: true, PayloadBytes: 268435456, Modes: phases.DefaultMemoryModes()},
		Numerics: defaultNumerics(),
		Locate:   defaultLocate(),
		Soak:     defaultSoak(),
	}
}

// Error is a configuration problem, tied to the key (or flag) at fault.
type Error struct {
	Source string // the file name, "-set ..." or "config"
	Key    string // e.g. "timing.sizes_bytes"; "" for a syntax error
	Msg    string // what is wrong and what to do
}

// Error says where and what, repeating at most the first 80 bytes of any
// key or quoted value it names (Clip): a megabyte-long key or value is
// named, not echoed.
func (e *Error) Error() string {
	where := e.Source
	if e.Key != "" {
		where += ": " + Clip(e.Key)
	}
	return where + ": " + ClipQuoted(e.Msg)
}

// Parse decodes a config file's bytes over the defaults, then each -set
// override in order: "section.key=value" (value in TOML syntax) for a
// top-level key or a table's, "run.NAME.key=value" for the [[run]] named
// NAME. The file is checked on its own first, so a file with a bad value is
// refused whatever the flags say; then the whole. Parse checks what needs
// no world size and resolves the timing runs; Validate checks the rest.
func Parse(name string, data []byte, sets []string) (Config, error) {
	cfg := Default()
	doc, err := parseDoc(name, string(data))
	if err != nil {
		return cfg, err
	}
	md, runs, err := decode(name, &doc, &cfg, true)
	if err != nil {
		return cfg, err
	}
	tables, runNames, err := runTables(name, cfg.RunTables, runs)
	if err != nil {
		return cfg, err
	}
	if err := cfg.finish(md, name, tables, nil); err != nil {
		return cfg, err
	}
	// checkKeys and runTables refuse unknown keys before decoding; this
	// catches any that the TOML library still left undecoded.
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		return cfg, unknownKeyOf(name, undecoded)
	}
	if len(sets) == 0 {
		return cfg, nil
	}
	runSets := map[string][]runSet{}
	for _, set := range sets {
		source := "-set " + Clip(set)
		key, value, err := splitSet(set)
		if err != nil {
			return cfg, err
		}
		if key == "run" || strings.HasPrefix(key, "run.") {
			rs, runName, err := parseRunSet(source, key, value, runNames)
			if err != nil {
				return cfg, err
			}
			runSets[runName] = append(runSets[runName], rs)
			continue
		}
		doc, err := parseSet(source, value, func(v string) string { return setDoc(key, v) })
		if err != nil {
			return cfg, err
		}
		if _, _, err := decode(source, &doc, &cfg, false); err != nil {
			return cfg, err
		}
	}
	return cfg, cfg.finish(md, "-set", tables, runSets)
}

// finish resolves the runs and checks the whole config; errors name source.
func (c *Config) finish(md toml.MetaData, source string, tables []runTable, sets map[string][]runSet) error {
	if err := c.resolveRuns(md, source, tables, sets); err != nil {
		return err
	}
	return c.check(source)
}

// document is one TOML document (the file, or one -set), parsed once: its
// metadata and its top-level values, still undecoded, so that its keys are
// checked before any value is decoded and nothing is parsed twice.
type document struct {
	md  toml.MetaData
	top map[string]toml.Primitive
}

// parseDoc bounds a document's shape with a scan of its bytes (checkShape),
// then parses it: every document goes through here, once.
func parseDoc(source, text string) (document, error) {
	if err := checkShape(source, text); err != nil {
		return document{}, err
	}
	var d document
	md, err := toml.Decode(text, &d.top)
	if err != nil {
		return document{}, decodeError(source, err)
	}
	d.md = md
	return d, nil
}

// decodeInto decodes each top-level value of d, in the document's order,
// into the field of the struct v points to whose toml tag names it
// (through embedded structs, for Run's Timing). The spelling is exact:
// checkKeys and checkRunKeys have refused any other. A key without a field
// is left undecoded, for MetaData.Undecoded to name.
func (d *document) decodeInto(v any) error {
	rv := reflect.ValueOf(v).Elem()
	seen := map[string]bool{}
	for _, k := range d.md.Keys() {
		top := k[0]
		if seen[top] {
			continue
		}
		seen[top] = true
		prim, ok := d.top[top]
		if !ok {
			continue
		}
		f, ok := fieldByTag(rv, top)
		if !ok {
			continue
		}
		if err := d.md.PrimitiveDecode(prim, f.Addr().Interface()); err != nil {
			return err
		}
	}
	return nil
}

// fieldByTag finds the field of struct value rv tagged toml:"tag".
func fieldByTag(rv reflect.Value, tag string) (reflect.Value, bool) {
	t := rv.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("toml")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			if fv, ok := fieldByTag(rv.Field(i), tag); ok {
				return fv, true
			}
			continue
		}
		if name == tag && name != "-" {
			return rv.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// decode checks one parsed document's keys (exact spelling, nothing
// unknown), then decodes it over cfg, and returns its [[run]] tables as
// the TOML library read them. file says whether it may hold [[run]]
// tables (a -set may not).
func decode(source string, doc *document, cfg *Config, file bool) (toml.MetaData, []map[string]any, error) {
	md := doc.md
	if err := checkKeys(source, md.Keys(), file); err != nil {
		return md, nil, err
	}
	var runs []map[string]any
	if prim, ok := doc.top["run"]; ok {
		// Into an empty interface the library hands over what it parsed
		// as it is: a look at the value's type, not a second decoding.
		var v any
		if err := doc.md.PrimitiveDecode(prim, &v); err != nil {
			return md, nil, decodeError(source, err)
		}
		if list, ok := v.([]any); ok && len(list) == 0 {
			return md, nil, &Error{Source: source, Key: "run", Msg: "= [] lists no runs: remove it (without [[run]] tables, [timing] is the one run)"}
		}
		if runs, ok = v.([]map[string]any); !ok {
			return md, nil, &Error{Source: source, Key: "run", Msg: "is not an array of tables: write each sweep as a [[run]] table (two brackets) with a name and the [timing] keys it changes"}
		}
	}
	if err := doc.decodeInto(cfg); err != nil {
		return md, nil, decodeError(source, err)
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 && !file {
		return md, nil, unknownKeyOf(source, undecoded)
	}
	if err := givenZero(source, md, cfg); err != nil {
		return md, nil, err
	}
	// A key given explicitly as 0 is an error even where 0 is the default.
	if md.IsDefined("required_ranks") {
		r := intRule{"required_ranks", int64(cfg.RequiredRanks), 2, MaxRanks,
			"%d is not a world size: give the exact number of ranks the run needs (at least 2), or leave the key out to accept any", "ranks"}
		if msg := r.outOfRange(); msg != "" {
			return md, nil, &Error{Source: source, Key: "required_ranks", Msg: msg}
		}
	}
	listGiven, rangeGiven, err := sizeForm(source, "timing.", func(leaf string) bool { return md.IsDefined("timing", leaf) })
	if err != nil {
		return md, nil, err
	}
	cfg.Timing.keepSizeForm(listGiven, rangeGiven)
	return md, runs, nil
}

// checkKeys refuses every key that is not one of Config's, spelt exactly:
// the TOML library matches fields without regard to case, so "Cycles" and
// "cycles" would otherwise both set one field, the last one winning.
// [[run]] tables are checked by runTables, with their own keys.
func checkKeys(source string, keys []toml.Key, file bool) error {
	var unknown []toml.Key
	for _, k := range keys {
		if k[0] == "run" {
			if file {
				continue
			}
			// However spelt ("run", "\"run\""), a -set may not give tables.
			return &Error{Source: source, Key: k.String(), Msg: "[[run]] tables are the file's: change one run's key with -set run.NAME.key=value"}
		}
		if _, ok := schema.hints[k.String()]; ok {
			continue
		}
		// Below a known key that is not a table the type is wrong, not the
		// key: sizes_bytes = [{a = 1}] is a type error, said by the decoder.
		if underLeaf(k) {
			continue
		}
		unknown = append(unknown, k)
	}
	if len(unknown) > 0 {
		return unknownKeyOf(source, unknown)
	}
	return nil
}

func underLeaf(k toml.Key) bool {
	for i := 1; i < len(k); i++ {
		prefix := k[:i].String()
		if _, ok := schema.hints[prefix]; ok && !schema.tables[prefix] {
			return true
		}
	}
	return false
}

// unknownKeyOf reports the deepest unknown key, the first in the document
// of those: "timming.sizes_bytes" suggests better than "timming".
func unknownKeyOf(source string, unknown []toml.Key) error {
	key := unknown[0]
	for _, k := range unknown {
		if len(k) > len(key) {
			key = k
		}
	}
	return unknownKey(source, key.String())
}

func unknownKey(source, key string) error {
	msg := "unknown key"
	if s := closestKey(key, KnownKeys()); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
		if strings.EqualFold(s, key) {
			msg += " (keys are case-sensitive)"
		}
	} else {
		msg += "; " + knownNear(key) + " (every key: docs/config.md)"
	}
	return &Error{Source: source, Key: key, Msg: msg}
}

// knownNear lists what may stand where key does: its table's keys when
// its table is known, else the top-level keys and the tables (the whole
// list of keys, some 70, is too long to read in a message).
func knownNear(key string) string {
	table, _, dotted := strings.Cut(key, ".")
	var top, tables, inTable []string
	for _, k := range KnownKeys() {
		t, _, ok := strings.Cut(k, ".")
		switch {
		case ok && t == table && dotted:
			inTable = append(inTable, k)
		case ok:
			if n := "[" + t + "]"; !slices.Contains(tables, n) {
				tables = append(tables, n)
			}
		default:
			top = append(top, k)
		}
	}
	if len(inTable) > 0 {
		return "[" + table + "] takes " + strings.Join(inTable, ", ")
	}
	return "known top-level keys: " + strings.Join(top, ", ") + "; tables: " + strings.Join(tables, ", ")
}

// runTables checks each [[run]] table's keys against what a run takes and
// lists the runs' names (a table without one is "run<N>").
func runTables(source string, prims []toml.Primitive, list []map[string]any) ([]runTable, []string, error) {
	if len(list) > MaxRuns {
		return nil, nil, &Error{Source: source, Key: "run", Msg: fmt.Sprintf("%d [[run]] tables are above rsag's bound of %d: merge some", len(list), MaxRuns)}
	}
	var tables []runTable
	var runNames []string
	for i, table := range list {
		label := fmt.Sprintf("[[run]] %d", i+1)
		if err := checkRunKeys(source, label, slices.Collect(maps.Keys(table))); err != nil {
			return nil, nil, err
		}
		name, _ := table["name"].(string)
		if name == "" {
			name = fmt.Sprintf("run%d", i+1)
		}
		t := runTable{prim: prims[i], given: map[string]bool{}}
		for k := range table {
			t.given[k] = true
		}
		tables = append(tables, t)
		runNames = append(runNames, name)
	}
	return tables, runNames, nil
}

// checkRunKeys refuses a key that a [[run]] table does not take, such as
// enabled (a run is timed when [timing] is), naming the keys it does take.
// Keys are checked in sorted order so that every rank names the same one.
func checkRunKeys(source, label string, keys []string) error {
	slices.Sort(keys)
	for _, k := range keys {
		if contains(schema.runKeys, k) {
			continue
		}
		key := toml.Key{"run", k}.String()
		msg := "unknown key in " + label
		if s := closestKey(k, schema.runKeys); s != "" && k != "enabled" {
			msg += fmt.Sprintf(": did you mean %q?", "run."+s)
			if strings.EqualFold(s, k) {
				msg += " (keys are case-sensitive)"
			}
		} else {
			if _, ok := schema.hints["timing."+k]; ok {
				msg = fmt.Sprintf("%s is a [timing] key that a [[run]] does not take (%s)", k, label)
				if k == "enabled" {
					msg += ": a run is timed whenever timing.enabled is true; remove the key, or the table"
				}
			}
			msg += "; a [[run]] takes " + strings.Join(schema.runKeys, ", ")
		}
		return &Error{Source: source, Key: key, Msg: msg}
	}
	return nil
}

// typeErrorRE matches the TOML library's type-mismatch errors, which are
// plain errors rather than toml.ParseError values.
var typeErrorRE = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (.*)$`)

// decodeError turns the TOML library's errors into ones that name the key.
func decodeError(source string, err error) error {
	line, key, msg := "", "", err.Error()
	var perr toml.ParseError
	if errors.As(err, &perr) {
		key, msg = perr.LastKey, perr.Message
		if perr.Position.Line > 0 {
			line = fmt.Sprint(perr.Position.Line)
		}
	} else if m := typeErrorRE.FindStringSubmatch(msg); m != nil {
		line, key, msg = m[1], m[2], m[3]
	} else {
		return &Error{Source: source, Msg: msg}
	}
	switch {
	case strings.Contains(msg, "has already been defined"):
		// The TOML library's words for a key written twice: bare, quoted
		// or dotted, it is one key, and the second is not a correction.
		msg = "is given twice (written bare, quoted or dotted, it is one key): give it once"
	case strings.Contains(msg, "is unknown: use"), strings.Contains(msg, "byte size"):
		// Our own parsers' messages say what the key takes already.
	default:
		msg += typeHint(key)
	}
	if line != "" {
		msg = "line " + line + ": " + msg
	}
	return &Error{Source: source, Key: key, Msg: msg}
}

// typeHint says what type a key takes, for type-mismatch errors.
func typeHint(key string) string {
	if t := schema.hints[key]; t != "" {
		return " (" + key + " takes " + t + ")"
	}
	return ""
}

// check validates what does not depend on the world size; errors name
// source, the input whose values are at fault.
func (c *Config) check(source string) error {
	bad := func(key, format string, args ...any) error {
		return &Error{Source: source, Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if !contains(Backends, c.Backend) {
		return bad("backend", "%q is not a backend: use one of %s", c.Backend, strings.Join(Backends, ", "))
	}
	if msg := deadlineOutOfRange(c.TimeoutS, false,
		fmt.Sprintf("the seconds any collective may take before the job is aborted, above 0, e.g. 0.5 or 180 (default %d)", DefaultTimeoutS)); msg != "" {
		return bad("timeout_s", "%s", msg)
	}
	if msg := deadlineOutOfRange(c.StartupTimeoutS, true,
		"the seconds MPI's start-up may take, e.g. 0.5 or 60, or 0 for timeout_s's (default 0)"); msg != "" {
		return bad("startup_timeout_s", "%s", msg)
	}
	folder := intRule{"rank_folder_above", int64(c.RankFolderAbove), 0, MaxRanks,
		fmt.Sprintf("%%d is not a world size: give the ranks above which every rank's files go into %s/, or 0 for always (default %d)", "ranks", DefaultRankFolderAbove), "ranks"}
	if msg := folder.outOfRange(); msg != "" {
		return bad("rank_folder_above", "%s", msg)
	}
	if strings.ContainsAny(c.History, "?#") {
		return bad("history", "%q holds ? or #, which SQLite reads as options: name the history file without them, e.g. results/history.db", c.History)
	}
	// Every section's values are checked whether it is on or off: a value
	// no run could take (locate.threshold = nan, timing.check =
	// "sometimes") is refused before anything runs, not found at the end
	// when summary.json echoes it, nor kept for the day the section is
	// turned on. Only what a section needs to run (soak's length, the
	// hierarchy's groups) is asked of it when it is on.
	if err := c.checkRuns(source); err != nil {
		return err
	}
	if !c.Timing.Enabled {
		c.Sweeps = nil
	}
	for _, check := range []func(func(key, format string, args ...any) error) error{
		c.Memory.check, c.Numerics.check, c.Hierarchy.check, c.Locate.check,
		func(bad func(key, format string, args ...any) error) error { return c.Soak.check(bad, c.Soak.Enabled) },
	} {
		if err := check(bad); err != nil {
			return err
		}
	}
	if !c.Hierarchy.Enabled {
		if err := c.checkWithoutGroups(source); err != nil {
			return err
		}
	}
	if !c.Contracts.Enabled && !c.Timing.Enabled && !c.Memory.Enabled && !c.Numerics.Enabled && !c.Locate.Enabled && !c.Soak.Enabled {
		return bad("enabled", "every phase is disabled: enable at least one of contracts, timing, memory, numerics, locate, soak")
	}
	return nil
}

// checkWithoutGroups refuses, with [hierarchy] off, a mode that runs
// within and across the hierarchy's groups: without the check it was found
// only once the phases reached it, after the contracts and the timings had
// run.
func (c *Config) checkWithoutGroups(source string) error {
	fix := "set [hierarchy] enabled = true (-set hierarchy.enabled=true), or drop it"
	if c.Timing.Enabled {
		for _, r := range c.Runs {
			for _, m := range r.Modes {
				if tm, ok := coll.ModeOf(m); ok && tm.NeedsGroups() {
					return &Error{Source: source, Key: c.runPrefix(r.Name) + "modes", Msg: fmt.Sprintf("%q runs within and across the hierarchy's groups, but [hierarchy] is off: %s", m, fix)}
				}
			}
		}
	}
	if c.Memory.Enabled {
		// The default memory modes are every mode that runs on the whole
		// world; the others run in the hierarchy's groups.
		for _, m := range c.Memory.Modes {
			if !slices.Contains(phases.DefaultMemoryModes(), m) {
				return &Error{Source: source, Key: "memory.modes", Msg: fmt.Sprintf("%q runs within and across the hierarchy's groups, but [hierarchy] is off: %s", m, fix)}
			}
		}
	}
	return nil
}

// Validate checks the config, as Parse returned it, against the world size
// the job started with. Every rank runs it on the same bytes, so every rank
// fails alike.
func (c *Config) Validate(world int) error {
	bad := func(key, format string, args ...any) error {
		return &Error{Source: "config", Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if world < 2 {
		return bad("", "the job has %d rank: rsag compares collectives between ranks and needs at least 2 (e.g. mpirun -np 2)", world)
	}
	if c.RequiredRanks != 0 && c.RequiredRanks != world {
		return bad("required_ranks", "the config requires exactly %d ranks but the job has %d: start %d ranks (mpirun -np %d, srun -n %d) or use -set required_ranks=%d",
			c.RequiredRanks, world, c.RequiredRanks, c.RequiredRanks, c.RequiredRanks, world)
	}
	if c.Timing.Enabled {
		if err := c.validateRuns(world); err != nil {
			return err
		}
	}
	if c.Memory.Enabled {
		if err := divisible("config", "memory.payload_bytes", []int64{int64(c.Memory.PayloadBytes)}, []coll.DType{coll.Float32}, world); err != nil {
			return err
		}
	}
	if c.Numerics.Enabled {
		if err := divisible("config", "numerics.sizes_bytes", int64s(c.Numerics.SizesBytes), c.Numerics.DTypes, world); err != nil {
			return err
		}
	}
	if c.Soak.Enabled {
		if err := c.Soak.validate(world); err != nil {
			return err
		}
	}
	if c.Hierarchy.Enabled {
		return c.Hierarchy.validate(world)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

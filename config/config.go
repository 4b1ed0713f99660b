// Package config reads rsag's TOML configuration: strict decoding (unknown
// keys are errors with the closest known key suggested), defaults in one
// place (Default), -set overrides through the same parser, and validation
// against the world size before any collective runs.
package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

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
	TimeoutS  int       `toml:"timeout_s"`
	Contracts Contracts `toml:"contracts"`
	Timing    Timing    `toml:"timing"`
	Memory    Memory    `toml:"memory"`
	// RunTables are the [[run]] tables, each a set of timing keys (and a
	// name) that override [timing]; Runs holds them resolved.
	RunTables []toml.Primitive `toml:"run" json:"-"`
	Runs      []Run            `toml:"-" json:"runs"`
}

type Contracts struct {
	Enabled bool `toml:"enabled"`
}

type Memory struct {
	Enabled      bool `toml:"enabled"`
	PayloadBytes Size `toml:"payload_bytes"`
	// Modes names the buffer-lifetime strategies to measure, in order.
	Modes []string `toml:"modes"`
}

// Backends are the values of the backend key and the -backend flag.
var Backends = []string{"auto", "nccl", "mpi"}

// MemoryModes are the strategies the memory phase knows, in the seed's
// order followed by ours.
var MemoryModes = phases.MemoryModeNames()

// DefaultTimeoutS is the seed's process-group timeout (timedelta(seconds=180)).
const DefaultTimeoutS = 180

// Default is the seed's run: its five sizes, 3 warmups, 10 cycles and a
// 256 MiB memory payload, every phase on.
func Default() Config {
	return Config{
		Backend:   "auto",
		TimeoutS:  DefaultTimeoutS,
		Contracts: Contracts{Enabled: true},
		Timing: Timing{Enabled: true, Warmups: 3, Cycles: 10,
			SizesBytes: []Size{1024, 65536, 1048576, 16777216, 268435456},
			DTypes:     []string{"float32"}, Ops: []string{"sum"}, Placements: []string{"out-of-place"},
			Methods: []string{"per-op"}, Batch: 20},
		Memory: Memory{Enabled: true, PayloadBytes: 268435456, Modes: append([]string(nil), MemoryModes...)},
	}
}

// Error is a configuration problem, tied to the key (or flag) at fault.
type Error struct {
	Source string // the file name, or "-set"
	Key    string // e.g. "timing.sizes_bytes"; "" for a syntax error
	Msg    string // what is wrong and what to do
}

func (e *Error) Error() string {
	where := e.Source
	if e.Key != "" {
		where += ": " + e.Key
	}
	return where + ": " + e.Msg
}

// Parse decodes a config file's bytes over the defaults, then each -set
// override ("section.key=value", value in TOML syntax) in order. It checks
// what needs no world size; Validate checks the rest.
func Parse(name string, data []byte, sets []string) (Config, error) {
	cfg := Default()
	md, err := toml.Decode(string(data), &cfg)
	if err != nil {
		return cfg, decodeError(name, err)
	}
	if err := checkDecoded(&cfg, md, name, false); err != nil {
		return cfg, err
	}
	rangeKeys := func(md toml.MetaData) bool {
		return md.IsDefined("timing", "min_bytes") || md.IsDefined("timing", "max_bytes")
	}
	if md.IsDefined("timing", "sizes_bytes") && rangeKeys(md) {
		return cfg, &Error{Source: name, Key: "timing.sizes_bytes", Msg: "given together with min_bytes/max_bytes: use either a list of sizes or a range"}
	}
	cfg.Timing.keepSizeForm(md.IsDefined("timing", "sizes_bytes"), rangeKeys(md))
	for _, set := range sets {
		doc, err := setToTOML(set)
		if err != nil {
			return cfg, err
		}
		smd, err := toml.Decode(doc, &cfg)
		if err != nil {
			return cfg, decodeError("-set "+set, err)
		}
		if err := checkDecoded(&cfg, smd, "-set "+set, true); err != nil {
			return cfg, err
		}
		cfg.Timing.keepSizeForm(smd.IsDefined("timing", "sizes_bytes"), rangeKeys(smd))
	}
	if err := cfg.resolveRuns(md, name); err != nil {
		return cfg, err
	}
	if undecoded := md.Undecoded(); len(undecoded) > 0 {
		return cfg, unknownKeyOf(name, undecoded)
	}
	return cfg, cfg.check()
}

// checkDecoded rejects explicit zero world sizes and, for -set documents
// (which hold no [[run]] tables to decode later), unknown keys.
func checkDecoded(cfg *Config, md toml.MetaData, source string, final bool) error {
	if final {
		if undecoded := md.Undecoded(); len(undecoded) > 0 {
			return unknownKeyOf(source, undecoded)
		}
	}
	// A key given explicitly as 0 is an error even where 0 is the default.
	if md.IsDefined("required_ranks") && cfg.RequiredRanks < 2 {
		return &Error{Source: source, Key: "required_ranks",
			Msg: fmt.Sprintf("%d is not a world size: give the exact number of ranks the run needs (at least 2), or leave the key out to accept any", cfg.RequiredRanks)}
	}
	return nil
}

// unknownKeyOf reports the deepest undecoded key: "timming.sizes_bytes"
// suggests better than "timming".
func unknownKeyOf(source string, undecoded []toml.Key) error {
	key := undecoded[0]
	for _, k := range undecoded {
		if len(k) > len(key) {
			key = k
		}
	}
	return unknownKey(source, key.String())
}

func unknownKey(source, key string) error {
	msg := "unknown key"
	if s := closestKey(key); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
	} else {
		msg += "; known keys: " + strings.Join(KnownKeys(), ", ")
	}
	return &Error{Source: source, Key: key, Msg: msg}
}

// typeErrorRE matches the TOML library's type-mismatch errors, which are
// plain errors rather than toml.ParseError values.
var typeErrorRE = regexp.MustCompile(`^toml: (?:line (\d+) )?\(last key "([^"]*)"\): (.*)$`)

// decodeError turns the TOML library's errors into ones that name the key.
func decodeError(source string, err error) error {
	var perr toml.ParseError
	if errors.As(err, &perr) {
		msg := perr.Message
		if perr.Position.Line > 0 {
			msg = fmt.Sprintf("line %d: %s", perr.Position.Line, msg)
		}
		return &Error{Source: source, Key: perr.LastKey, Msg: msg + typeHint(perr.LastKey)}
	}
	if m := typeErrorRE.FindStringSubmatch(err.Error()); m != nil {
		msg := m[3]
		if m[1] != "" {
			msg = "line " + m[1] + ": " + msg
		}
		return &Error{Source: source, Key: m[2], Msg: msg + typeHint(m[2])}
	}
	return &Error{Source: source, Msg: err.Error()}
}

// typeHint says what type a key takes, for type-mismatch errors.
func typeHint(key string) string {
	t, ok := keyTypes()[key]
	if !ok {
		return ""
	}
	return " (" + key + " takes " + t + ")"
}

// setToTOML turns "timing.warmups=5" into "[timing]\nwarmups = 5\n". A value
// that is not valid TOML but a bare word (-set backend=mpi) is quoted.
func setToTOML(set string) (string, error) {
	key, value, ok := strings.Cut(set, "=")
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	if !ok || key == "" || value == "" {
		return "", &Error{Source: "-set " + set, Msg: "expected section.key=value, e.g. -set timing.warmups=5 or -set 'timing.sizes_bytes=[1024,65536]'"}
	}
	section, leaf := "", key
	if i := strings.LastIndex(key, "."); i >= 0 {
		section, leaf = key[:i], key[i+1:]
	}
	if _, err := toml.Decode("v = "+value, new(map[string]any)); err != nil && !strings.ContainsAny(value, "[]{}\"'=") {
		value = fmt.Sprintf("%q", value)
	}
	if section == "" {
		return leaf + " = " + value + "\n", nil
	}
	return "[" + section + "]\n" + leaf + " = " + value + "\n", nil
}

// check validates what does not depend on the world size.
func (c *Config) check() error {
	bad := func(key, format string, args ...any) error {
		return &Error{Source: "config", Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	if !contains(Backends, c.Backend) {
		return bad("backend", "%q is not a backend: use one of %s", c.Backend, strings.Join(Backends, ", "))
	}
	if c.TimeoutS <= 0 {
		return bad("timeout_s", "%d is not a deadline: give the seconds any collective may take before the job is aborted, at least 1 (default %d)", c.TimeoutS, DefaultTimeoutS)
	}
	if c.Timing.Enabled {
		if err := c.checkRuns(); err != nil {
			return err
		}
	}
	if c.Memory.Enabled {
		if c.Memory.PayloadBytes <= 0 {
			return bad("memory.payload_bytes", "%d is not a positive size: give the payload in bytes, e.g. 268435456 or \"256M\"", c.Memory.PayloadBytes)
		}
		if len(c.Memory.Modes) == 0 {
			return bad("memory.modes", "is empty: list modes from %s, or set memory.enabled = false", strings.Join(MemoryModes, ", "))
		}
		for _, m := range c.Memory.Modes {
			if !contains(MemoryModes, m) {
				return bad("memory.modes", "%q is not a memory mode: use %s", m, strings.Join(MemoryModes, ", "))
			}
		}
	}
	if !c.Contracts.Enabled && !c.Timing.Enabled && !c.Memory.Enabled {
		return bad("enabled", "every phase is disabled: enable at least one of contracts, timing, memory")
	}
	return nil
}

// Float32Size is the element size of the timing and memory payloads.
const Float32Size = 4

// Validate checks the config against the world size the job started with.
// Every rank runs it on the same bytes, so every rank fails alike.
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
	unit := int64(world * Float32Size)
	divisible := func(key string, s Size) error {
		if int64(s)%unit == 0 {
			return nil
		}
		lo := int64(s) / unit * unit
		if lo == 0 {
			lo = unit
		}
		return bad(key, "%d bytes does not divide by %d ranks x %d bytes (float32) = %d: use a multiple of %d, e.g. %d or %d",
			s, world, Float32Size, unit, unit, lo, lo+unit)
	}
	if c.Timing.Enabled {
		if err := c.validateRuns(world); err != nil {
			return err
		}
	}
	if c.Memory.Enabled {
		if err := divisible("memory.payload_bytes", c.Memory.PayloadBytes); err != nil {
			return err
		}
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

// KnownKeys lists every key a config may set, dotted, sorted.
func KnownKeys() []string {
	var keys []string
	for k := range keyTypes() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// keyTypes maps each dotted key to the kind of value it takes, from the
// struct tags, so that the key list can never drift from Config.
func keyTypes() map[string]string {
	out := map[string]string{}
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := prefix + f.Tag.Get("toml")
			switch {
			case name == "run" || name == "-":
				continue
			case f.Type.Kind() == reflect.Struct:
				walk(name+".", f.Type)
			case f.Type == reflect.TypeOf(Size(0)):
				out[name] = "a byte size (integer, or a string such as \"256M\")"
			case f.Type.Kind() == reflect.Slice && f.Type.Elem() == reflect.TypeOf(Size(0)):
				out[name] = "a list of byte sizes, e.g. [1024, \"1M\"]"
			case f.Type.Kind() == reflect.Slice:
				out[name] = "a list of strings"
			case f.Type.Kind() == reflect.Bool:
				out[name] = "true or false"
			case f.Type.Kind() == reflect.Int:
				out[name] = "an integer"
			case f.Type.Kind() == reflect.Float64:
				out[name] = "a number"
			default:
				out[name] = "a string"
			}
		}
	}
	walk("", reflect.TypeOf(Config{}))
	// [[run]] tables take a name and every [timing] key but enabled.
	out["run.name"] = "a string"
	for k, v := range out {
		if leaf, ok := strings.CutPrefix(k, "timing."); ok && leaf != "enabled" {
			out["run."+leaf] = v
		}
	}
	return out
}

// closestKey suggests the known key nearest to an unknown one, by edit
// distance over the dotted name and over its last part.
func closestKey(key string) string {
	best, bestDist, bestFull := "", 4, 0
	leaf := key[strings.LastIndex(key, ".")+1:]
	for _, k := range KnownKeys() {
		full := editDistance(key, k)
		d := min(full, editDistance(leaf, k[strings.LastIndex(k, ".")+1:])+1)
		// On a tie the key closer as a whole wins: timming.warmups is
		// timing.warmups, not run.warmups.
		if d < bestDist || (d == bestDist && best != "" && full < bestFull) {
			best, bestDist, bestFull = k, d, full
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

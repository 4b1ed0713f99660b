package config

import (
	"reflect"
	"slices"
	"strings"

	"rsag/coll"
)

// keySchema is every key a config may give, read from Config's struct tags
// once, so that the key list can never drift from Config.
type keySchema struct {
	hints   map[string]string // each dotted key and table: what it takes
	tables  map[string]bool   // the keys that are tables, [timing] and [[run]]
	known   []string          // the dotted keys that are not tables, sorted
	runKeys []string          // the keys a [[run]] table takes, sorted
}

var schema = buildSchema()

// nameHints are the names each typed list takes, from coll's own lists.
var nameHints = map[reflect.Type][]string{
	reflect.TypeOf(coll.DType(0)):       coll.DTypeNames(),
	reflect.TypeOf(coll.Op(0)):          coll.OpNames(),
	reflect.TypeOf(coll.Placement("")):  coll.Names(coll.Placements),
	reflect.TypeOf(coll.Method("")):     coll.Names(coll.Methods),
	reflect.TypeOf(coll.Mode("")):       coll.Names(coll.Modes),
	reflect.TypeOf(coll.BufferKind("")): coll.Names(coll.BufferKinds),
	reflect.TypeOf(coll.CTAPolicy("")):  coll.Names(coll.CTAPolicies),
}

func buildSchema() keySchema {
	s := keySchema{hints: map[string]string{}, tables: map[string]bool{"run": true}}
	s.hints["run"] = "an array of tables, [[run]]"
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := prefix + f.Tag.Get("toml")
			switch {
			case name == prefix+"run" || name == prefix+"-":
				continue
			case f.Type.Kind() == reflect.Struct:
				s.tables[name] = true
				s.hints[name] = "a table, [" + name + "]"
				walk(name+".", f.Type)
				continue
			}
			s.hints[name] = hintFor(f.Type)
			s.known = append(s.known, name)
		}
	}
	walk("", reflect.TypeOf(Config{}))
	// [[run]] tables take a name and every [timing] key but enabled.
	s.runKeys = []string{"name"}
	s.hints["run.name"] = "a string"
	for _, k := range s.known {
		if leaf, ok := strings.CutPrefix(k, "timing."); ok && leaf != "enabled" {
			s.runKeys = append(s.runKeys, leaf)
			s.hints["run."+leaf] = s.hints[k]
		}
	}
	for _, leaf := range s.runKeys {
		s.known = append(s.known, "run."+leaf)
	}
	slices.Sort(s.known)
	slices.Sort(s.runKeys)
	return s
}

func hintFor(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(Size(0)):
		return "a byte size (integer, or a string such as \"256M\")"
	case t.Kind() == reflect.Slice && t.Elem() == reflect.TypeOf(Size(0)):
		return "a list of byte sizes, e.g. [1024, \"1M\"]"
	case t.Kind() == reflect.Slice && len(nameHints[t.Elem()]) > 0:
		return "a list of names from " + strings.Join(nameHints[t.Elem()], ", ")
	case t.Kind() == reflect.Slice:
		return "a list of strings"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return "an integer"
	case t.Kind() == reflect.Float64:
		return "a number"
	}
	return "a string"
}

// KnownKeys lists every key a config may set, dotted, sorted.
func KnownKeys() []string { return slices.Clone(schema.known) }

// closestKey suggests the candidate nearest to an unknown key: one equal
// but for case first, else by edit distance over the dotted name and over
// its last part.
func closestKey(key string, candidates []string) string {
	// No key is this long; measuring the distance to one would cost
	// seconds for a key of a megabyte.
	if len(key) > 100 {
		return ""
	}
	for _, k := range candidates {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	best, bestDist, bestFull := "", 4, 0
	leaf := key[strings.LastIndex(key, ".")+1:]
	for _, k := range candidates {
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

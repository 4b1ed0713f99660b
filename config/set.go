package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

const setUsage = "expected section.key=value, e.g. -set timing.warmups=5 or -set 'timing.sizes_bytes=[1024,65536]', or run.NAME.key=value for the [[run]] named NAME"

// splitSet splits "timing.warmups=5" into its key and value. A -set is one
// line: a newline would let one flag set several keys unseen.
func splitSet(set string) (key, value string, err error) {
	if strings.ContainsAny(set, "\n\r") {
		return "", "", &Error{Source: "-set " + Clip(fmt.Sprintf("%q", set)),
			Msg: "holds a line break: give one key per -set, and repeat -set for the next"}
	}
	key, value, ok := strings.Cut(set, "=")
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	if !ok || key == "" || value == "" {
		return "", "", &Error{Source: "-set " + Clip(set), Msg: setUsage}
	}
	return key, value, nil
}

var integerRE = regexp.MustCompile(`^[+-]?[0-9][0-9_]*$`)

// parseSet parses the document doc makes of a -set's value. A value that
// is not TOML but a bare word is a string, so that -set backend=mpi means
// "mpi": only then is the document parsed a second time, with the value
// quoted (a bare word holds no brackets, so that parse is small and flat).
func parseSet(source, value string, doc func(value string) string) (document, error) {
	d, err := parseDoc(source, doc(value))
	if err == nil || !bareWord(value) {
		return d, err
	}
	if quoted, qerr := parseDoc(source, doc(strconv.Quote(value))); qerr == nil {
		return quoted, nil
	}
	return d, err
}

// bareWord says whether a value that TOML refused is a word to quote. An
// integer TOML cannot hold is not, so that its key's error says it is out
// of range rather than that it is a string.
func bareWord(value string) bool {
	return !integerRE.MatchString(value) && !strings.ContainsAny(value, "[]{}\"'=")
}

// setDoc turns "timing.warmups", "5" into "[timing]\nwarmups = 5\n".
func setDoc(key, value string) string {
	section, leaf := "", key
	if i := strings.LastIndex(key, "."); i >= 0 {
		section, leaf = key[:i], key[i+1:]
	}
	if section == "" {
		return leaf + " = " + value + "\n"
	}
	return "[" + section + "]\n" + leaf + " = " + value + "\n"
}

// parseRunSet reads -set run.NAME.key=value: the key of the [[run]] named
// NAME (everything between "run." and the last dot, so a name may hold
// dots). run.key=value is refused with how to change a run instead: which
// run it meant is not for rsag to guess.
func parseRunSet(source, key, value string, runNames []string) (runSet, string, error) {
	if key == "run" {
		return runSet{}, "", &Error{Source: source, Key: key, Msg: "[[run]] tables are the file's: change one run's key with -set run.NAME.key=value" + runList(runNames)}
	}
	rest := strings.TrimPrefix(key, "run.")
	i := strings.LastIndex(rest, ".")
	if i < 0 {
		leaf := rest
		msg := fmt.Sprintf("a [[run]] is changed by its name: -set run.NAME.%s=%s changes the run named NAME, and -set timing.%s=%s every run that does not set %s itself",
			leaf, value, leaf, value, leaf)
		if len(runNames) == 0 {
			msg = fmt.Sprintf("this config has no [[run]] tables, so [timing] is its one run: use -set timing.%s=%s", leaf, value)
		} else {
			msg += runList(runNames)
		}
		return runSet{}, "", &Error{Source: source, Key: key, Msg: msg}
	}
	name, leaf := rest[:i], rest[i+1:]
	if len(runNames) == 0 {
		return runSet{}, "", &Error{Source: source, Key: key, Msg: fmt.Sprintf(
			"this config has no [[run]] tables, so [timing] is its one run: use -set timing.%s=%s", leaf, value)}
	}
	if !contains(runNames, name) {
		return runSet{}, "", &Error{Source: source, Key: key, Msg: fmt.Sprintf(
			"no [[run]] is named %q: the runs are %s", name, strings.Join(runNames, ", "))}
	}
	doc, err := parseSet(source, value, func(v string) string { return leaf + " = " + v + "\n" })
	if err != nil {
		return runSet{}, "", err
	}
	if err := checkRunKeys(source, "-set for run "+name, slices.Collect(maps.Keys(doc.top))); err != nil {
		return runSet{}, "", err
	}
	return runSet{source: source, doc: doc}, name, nil
}

func runList(runNames []string) string {
	if len(runNames) == 0 {
		return " (this config has none)"
	}
	return "; the runs are " + strings.Join(runNames, ", ")
}

// StartupTimeout is the deadline of MPI's start-up (MPI_Init, and the
// agreements up to the config's broadcast): startup_timeout_s when a -set
// gives a valid one above 0, else timeout_s when a -set gives a valid one,
// else DefaultTimeoutS, in seconds (fractions too). The file's keys cannot
// count: rank 0 reads the file only once MPI has started. An invalid -set
// is refused later, with the config, like any other.
func StartupTimeout(sets []string) time.Duration {
	timeout, startup := float64(DefaultTimeoutS), 0.0
	for _, set := range sets {
		key, _, ok := strings.Cut(set, "=")
		if key = strings.TrimSpace(key); !ok || (key != "timeout_s" && key != "startup_timeout_s") {
			continue
		}
		cfg, err := Parse("-set", nil, []string{set})
		switch {
		case err != nil:
		case key == "timeout_s":
			timeout = cfg.TimeoutS
		default:
			startup = cfg.StartupTimeoutS
		}
	}
	if startup > 0 {
		return Seconds(startup)
	}
	return Seconds(timeout)
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"rsag/config"
)

// options are the command-line flags. Go's flag package accepts one or two
// dashes, so -config and --config are the same flag.
type options struct {
	configPath string
	outputDir  string
	backend    string
	history    string // the history database the run appends itself to
	sets       []string
	version    bool
	overwrite  bool // replace the results of an earlier run in outputDir
}

// setFlags collects repeated -set flags in order.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// onceFlag is a string flag that may be given twice only with the same
// value: -output-dir a -output-dir b is a contradiction, not "b".
type onceFlag struct {
	value *string
	set   bool
}

func (f *onceFlag) String() string {
	if f.value == nil {
		return ""
	}
	return *f.value
}

func (f *onceFlag) Set(v string) error {
	if f.set && v != *f.value {
		return fmt.Errorf("given twice with different values (%q and %q): give it once", config.Clip(*f.value), config.Clip(v))
	}
	*f.value, f.set = v, true
	return nil
}

const usageText = `rsag proves that AllReduce equals ReduceScatter followed by AllGather on the
ranks it is started on, times both, and measures their device memory.

Usage:
  mpirun -np 4 ./rsag -config configs/ch7.toml -output-dir results/ch7
  sbatch slurm/ch7.sbatch
  ./rsag report results/ch7                  a run's report.html and tables again (no MPI, no GPU)
  ./rsag compare results/a results/b         B against A, case by case (no MPI, no GPU; rsag compare -h)
  ./rsag suspects results/locate             a locate run's suspects and which to drain (-format json or nul: scripts)
  ./rsag history results/history.db          the runs over time, each case's trend, each node as a suspect
                                             (rsag history -h); a run appends itself with -history results/history.db
  ./rsag check -baseline results/history.db results/today
                                             a run against the history's last complete runs, exit 1 when slower
                                             (rsag check -h)

Flags:
`

// parseFlags reads the command line. errHelp is returned for -h.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var sets setFlags
	fs := flag.NewFlagSet("rsag", flag.ContinueOnError)
	// The flag package prints its error and the usage on every rank; the
	// error is returned and said once (see job.Options.FlagError), and the
	// usage is printed for -h alone.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	// No -output-dir: each run gets a new dir under results/ (job.Options).
	o.configPath = "configs/ch7.toml"
	outputDir := &onceFlag{value: &o.outputDir}
	// The flag package prints each default from the flag's value: the
	// usage strings do not repeat it.
	fs.Var(&onceFlag{value: &o.configPath}, "config", "TOML config `file`")
	fs.Var(outputDir, "output-dir", "`directory` for the results (created if missing;\ndefault: a new one, results/DATE-TIME-CONFIG, and results/latest links to it)")
	fs.Var(&onceFlag{value: &o.backend}, "backend", "auto, nccl or mpi (default: the config's backend key, else auto)")
	history := &onceFlag{value: &o.history}
	fs.Var(history, "history", "append the ended run to the history database `file` (docs/history.md;\ndefault: RSAG_HISTORY, else the config's history key)")
	fs.BoolVar(&o.overwrite, "overwrite", false, "replace the results of an earlier run in -output-dir (without it, rsag refuses to touch them)")
	fs.Var(&sets, "set", "override a config key: `section.key=value`, value in TOML syntax, e.g. -set 'timing.sizes_bytes=[1024,65536]',\nor run.NAME.key=value for the [[run]] named NAME (repeatable)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usageText)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return o, err
		}
		// The flag package quotes the whole value it refuses.
		return o, errors.New(config.ClipQuoted(err.Error()))
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q: every setting is a flag (see rsag -h; two runs are compared with rsag compare A B)", config.Clip(fs.Arg(0)))
	}
	if err := checkSets(sets, o.backend); err != nil {
		return o, err
	}
	o.sets = sets
	if o.backend != "" {
		o.sets = append(o.sets, "backend="+o.backend)
	}
	if outputDir.set && o.outputDir == "" {
		return o, errors.New("-output-dir is empty: give a directory for the results")
	}
	if history.set && o.history == "" {
		return o, errors.New("-history is empty: give the history database's file, e.g. -history results/history.db")
	}
	return o, nil
}

// checkSets refuses contradictory overrides: one key set twice to different
// values, or -set backend=X against -backend Y. Later-wins would silently
// run something the user did not mean.
func checkSets(sets []string, backend string) error {
	seen := map[string]string{}
	for _, set := range sets {
		key, value, ok := strings.Cut(set, "=")
		if !ok {
			continue // config.Parse names the malformed -set
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		if prev, dup := seen[key]; dup && prev != value {
			return fmt.Errorf("-set %s is given twice with different values (%s and %s): give it once", config.Clip(key), config.Clip(prev), config.Clip(value))
		}
		seen[key] = value
	}
	if v, ok := seen["backend"]; ok && backend != "" && strings.Trim(v, `"'`) != backend {
		return fmt.Errorf("-backend %s contradicts -set backend=%s: give one of them", config.Clip(backend), config.Clip(v))
	}
	return nil
}

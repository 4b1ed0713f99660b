package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// options are the command-line flags. Go's flag package accepts one or two
// dashes, so -config and --config are the same flag.
type options struct {
	configPath string
	outputDir  string
	backend    string
	sets       []string
	version    bool
}

// setFlags collects repeated -set flags in order.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

const usageText = `rsag proves that AllReduce equals ReduceScatter followed by AllGather on the
ranks it is started on, times both, and measures their device memory.

Usage:
  mpirun -np 4 ./rsag -config configs/ch7.toml -output-dir results/ch7
  sbatch slurm/ch7.sbatch

Flags:
`

// parseFlags reads the command line. errHelp is returned for -h.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var sets setFlags
	fs := flag.NewFlagSet("rsag", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.configPath, "config", "configs/ch7.toml", "TOML config `file`")
	fs.StringVar(&o.outputDir, "output-dir", "results/latest", "`directory` for the CSV files (created if missing)")
	fs.StringVar(&o.backend, "backend", "", "auto, nccl or mpi (default: the config's backend key, else auto)")
	fs.Var(&sets, "set", "override a config key: `section.key=value`, value in TOML syntax, e.g. -set 'timing.sizes_bytes=[1024,65536]' (repeatable)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q: every setting is a flag (see rsag -h)", fs.Arg(0))
	}
	o.sets = sets
	if o.backend != "" {
		o.sets = append(o.sets, "backend="+o.backend)
	}
	if o.outputDir == "" {
		return o, errors.New("-output-dir is empty: give a directory for the results")
	}
	return o, nil
}

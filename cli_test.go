package main

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"rsag/internal/fold"
)

func TestContradictoryFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" means accepted
	}{
		{[]string{"-output-dir", "a", "-output-dir", "a"}, ""},
		{[]string{"-output-dir", "a", "-output-dir", "b"}, `given twice with different values ("a" and "b")`},
		{[]string{"-config", "x.toml", "--config", "y.toml"}, "given twice with different values"},
		{[]string{"-backend", "mpi", "-set", "backend=mpi"}, ""},
		{[]string{"-backend", "mpi", "-set", `backend="nccl"`}, `-backend mpi contradicts -set backend="nccl"`},
		{[]string{"-set", "timing.cycles=3", "-set", "timing.cycles = 3"}, ""},
		{[]string{"-set", "timing.cycles=3", "-set", "timing.cycles=4"}, "-set timing.cycles is given twice with different values (3 and 4)"},
		{[]string{"-overwrite", "-output-dir", "r"}, ""},
	} {
		o, err := parseFlags(c.args, io.Discard)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
		if c.want == "" && c.args[0] == "-overwrite" && !o.overwrite {
			t.Errorf("%v: overwrite not set", c.args)
		}
	}
}

// -h says each default once and names rsag compare.
func TestHelp(t *testing.T) {
	var out strings.Builder
	if _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	help := out.String()
	for _, want := range []string{"./rsag compare results/a results/b", "./rsag report results/ch7", "./rsag history results/history.db", "-history results/history.db", "(default configs/ch7.toml)", "results/DATE-TIME-CONFIG, and results/latest links to it"} {
		if strings.Count(help, want) != 1 {
			t.Errorf("-h says %q %d times, want once:\n%s", want, strings.Count(help, want), help)
		}
	}
	for _, line := range strings.Split(help, "\n") {
		if strings.Count(line, "default") > 1 {
			t.Errorf("a line says its default twice: %q", line)
		}
		// Laid out to fit the terminal, as the flag package indents (a tab
		// after four spaces: column 8), rather than left to fold (fold).
		if n := len(strings.Replace(line, "    \t", "        ", 1)); n > fold.Width {
			t.Errorf("a line of %d columns, above %d: %q", n, fold.Width, line)
		}
	}
}

// What a flag's error repeats of its values is clipped, as the config's.
func TestFlagErrorsClipTheirValues(t *testing.T) {
	long := strings.Repeat("x", 100000)
	for _, args := range [][]string{
		{"-output-dir", "a", "-output-dir", long},
		{"-set", "timing.cycles=3", "-set", "timing.cycles=" + long},
		{"-backend", long, "-set", "backend=mpi"},
		{long},
	} {
		_, err := parseFlags(args, io.Discard)
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "... (1000") {
			t.Errorf("%.60q: %.500v", args, err)
		}
	}
}

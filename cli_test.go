package main

import (
	"io"
	"strings"
	"testing"
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

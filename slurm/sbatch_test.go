package slurm_test

import (
	"os"
	"strings"
	"testing"
)

// Slurm sends stderr to the --output file unless --error is given, and an
// --error in the script outlives `sbatch -o my.log`: rsag's messages would
// then land in a file the user did not name. So the script sets --output
// alone. (Read from the script itself: this needs no cluster.)
func TestStderrFollowsOutput(t *testing.T) {
	b, err := os.ReadFile("ch7.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	var output bool
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "#SBATCH" {
			continue
		}
		opt := f[1]
		switch {
		case strings.HasPrefix(opt, "--error"), strings.HasPrefix(opt, "-e"):
			t.Errorf("ch7.sbatch sets %q: stderr would not follow `sbatch -o FILE`", l)
		case strings.HasPrefix(opt, "--output"), strings.HasPrefix(opt, "-o"):
			output = true
		}
	}
	if !output {
		t.Error("ch7.sbatch sets no #SBATCH --output: its log would be slurm-<jobid>.out, not the documented rsag-ch7-<jobid>.out")
	}
}

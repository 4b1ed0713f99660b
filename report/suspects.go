package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// SuspectsUsage is rsag suspects' usage.
const SuspectsUsage = `usage: rsag suspects DIR

Prints the suspects of a finished locate run, from DIR/summary.json, one a
line, tab-separated, for scripts (slurm/healthcheck.sbatch drains by it):

  KIND  NODES  FIGURE  TEXT
  node  node3  bandwidth 0.31x median  node3 (bandwidth 0.31x median)

KIND is node, link, rank or rank-link; NODES the nodes, joined by commas.
Nothing is printed when there is no suspect. Exit status: 0; 1 when DIR has
no summary.json of a complete run with a locate section; 2 for bad usage.
`

// SuspectsCommand is rsag suspects DIR.
func SuspectsCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, SuspectsUsage)
		if len(args) == 1 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	path := filepath.Join(args[0], SummaryFile)
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(stderr, "rsag suspects: %v: give the output dir of a finished run\n", err)
		return 1
	}
	s, err := ReadSummary(path, data)
	switch {
	case err != nil:
		fmt.Fprintf(stderr, "rsag suspects: %v\n", err)
		return 1
	case s.Status != Statuses[0]:
		fmt.Fprintf(stderr, "rsag suspects: %s: the run %s (%s): its findings are not complete\n", path, s.Status, s.Reason)
		return 1
	case s.Locate == nil:
		fmt.Fprintf(stderr, "rsag suspects: %s: no locate section: run configs/locate.toml (locate.enabled = true)\n", path)
		return 1
	}
	for _, sp := range s.Locate.Suspects {
		fmt.Fprintf(stdout, "%s\t%s\t%s\t%s\n", sp.Kind, strings.Join(sp.Nodes, ","), sp.FigureText(), sp.Text)
	}
	return 0
}

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"rsag/outdir"
)

// inDir runs argv in dir (a person's working directory), within limit.
func inDir(t *testing.T, dir string, limit time.Duration, argv ...string) result {
	t.Helper()
	return runWithin(t, limit, strings.Join(argv, " "), func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.WaitDelay = dir, jobEnv(t), 10*time.Second
		return cmd
	})
}

// readmeCommand is the README's command line (in a code block) that names config, as a
// person would copy it into a root shell on this machine, with the
// repository's scripts and the binary under test where it says
// scripts/... and ./rsag.
func readmeCommand(t *testing.T, config string) []string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	inCode := false
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		line, _, _ = strings.Cut(line, "#")
		argv := strings.Fields(line)
		if !inCode || len(argv) == 0 || !slices.Contains(argv, config) {
			continue
		}
		for i, a := range argv {
			switch {
			case a == "./rsag":
				argv[i] = rsagBin
			case strings.HasPrefix(a, "scripts/"):
				argv[i], _ = filepath.Abs(filepath.Join("..", a))
			}
		}
		return argv
	}
	t.Fatalf("README.md has no command line that names %s", config)
	return nil
}

// verdictRe is the line that ends every run: PASSED or FAILED, and where
// the results are.
var verdictRe = regexp.MustCompile(`^rsag: (PASSED|INCONCLUSIVE|INCOMPLETE|CHECKS FAILED|FAILED \(exit \d+\)|SUSPECTS FOUND \(exit 4\)): .+; (results in \S+|nothing was written)$`)

// verdict is the verdict line that must end stdout, said once, in at
// most 120 columns, and its parts (nil when it is not there).
func verdict(t *testing.T, stdout string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	said := 0
	for _, l := range lines {
		if verdictRe.MatchString(l) {
			said++
		}
	}
	last := lines[len(lines)-1]
	m := verdictRe.FindStringSubmatch(last)
	if m == nil || said != 1 || utf8.RuneCountInString(last) > 120 {
		t.Errorf("stdout does not end with one verdict line of at most 120 columns matching %s:\n%s", verdictRe, stdout)
		return nil
	}
	return m
}

// The README's smoke command, run twice from a person's working directory
// with no -output-dir: both runs pass, each in a dir of its own under
// results/, and results/latest links to the second. A dir given with
// -output-dir that holds results is still refused, latest among them, and
// rsag report and rsag compare read through the link.
func TestTheREADMESmokeCommandRunsTwice(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	cfg, err := os.ReadFile("../configs/smoke.toml")
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(work, "configs"), 0o755)
	writeFile(t, filepath.Join(work, "configs"), "smoke.toml", string(cfg))
	smokeCmd := readmeCommand(t, "configs/smoke.toml")

	var dirs []string
	for i := range 2 {
		r := inDir(t, work, 2*time.Minute, smokeCmd...)
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i+1, r.code, r.stdout, r.stderr)
		}
		m := verdict(t, r.stdout)
		if m == nil || m[1] != "PASSED" || !strings.HasPrefix(m[2], "results in results/") {
			t.Fatalf("run %d's verdict: %v", i+1, m)
		}
		dir := strings.TrimPrefix(m[2], "results in ")
		if !regexp.MustCompile(`^results/\d{8}-\d{6}-smoke(-\d+)?$`).MatchString(dir) {
			t.Errorf("run %d's dir is %s; want results/DATE-TIME-smoke", i+1, dir)
		}
		if run, err := outdir.ReadRecord(filepath.Join(work, dir)); err != nil || run.Status != outdir.StatusComplete {
			t.Errorf("run %d's %s: %+v, %v; want complete", i+1, outdir.RunFile, run, err)
		}
		dirs = append(dirs, dir)
	}
	if dirs[0] == dirs[1] {
		t.Fatalf("both runs wrote into %s", dirs[0])
	}
	if target, err := os.Readlink(filepath.Join(work, "results", "latest")); err != nil || target != filepath.Base(dirs[1]) {
		t.Errorf("results/latest -> %q, %v; want the second run's %s", target, err, filepath.Base(dirs[1]))
	}
	if entries, _ := os.ReadDir(filepath.Join(work, "results")); len(entries) != 3 {
		t.Errorf("results/ holds %v; want the two runs' dirs and latest", entries)
	}

	// The results of a dir named by -output-dir are never replaced without
	// -overwrite: neither the first run's nor those latest links to.
	for _, dir := range []string{dirs[0], "results/latest"} {
		r := inDir(t, work, time.Minute, append(smokeCmd, "-output-dir", dir)...)
		if r.code != 2 {
			t.Errorf("-output-dir %s, which holds results: exit %d, want 2\n%s", dir, r.code, r.stderr)
		}
		saidOnce(t, r.stderr, "already holds results of an earlier run")
		if m := verdict(t, r.stdout); m != nil && m[1] != "FAILED (exit 2)" {
			t.Errorf("a refused run's verdict: %v", m)
		}
	}
	if run, err := outdir.ReadRecord(filepath.Join(work, dirs[0])); err != nil || run.Status != outdir.StatusComplete {
		t.Errorf("the refused run touched the first's %s: %+v, %v", outdir.RunFile, run, err)
	}

	// No MPI: the page again, through the link, and the two runs compared.
	if r := inDir(t, work, time.Minute, rsagBin, "report", "results/latest"); r.code != 0 || !strings.Contains(r.stdout, "the run held") {
		t.Errorf("rsag report results/latest: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// (Its exit status is the judge's: 1 when noise made B slower, 3 when one run cannot judge a change.)
	if r := inDir(t, work, time.Minute, rsagBin, "compare", dirs[0], "results/latest"); r.code == 2 || r.code > 3 || !strings.Contains(r.stdout, " 6 case(s)") {
		t.Errorf("rsag compare %s results/latest: exit %d\n%s\n%s", dirs[0], r.code, r.stdout, r.stderr)
	}
}

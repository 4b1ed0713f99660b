package e2e

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"rsag/coll"
	"rsag/history"
	"rsag/internal/testkit/inmem"
	"rsag/outdir"
	"rsag/report"
)

// historyRuns are the runs in the history file at path, oldest first.
func historyRuns(t *testing.T, path string) []history.RunRow {
	t.Helper()
	db, err := history.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs(0)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// A run appends itself to the history named by -history, RSAG_HISTORY or
// the config's history key (in that order): a passing run as complete, a
// failed one as failed and never a baseline. A history it could not
// append to is refused before anything runs (exit 2, nothing made), and
// an append that fails at the end leaves the run's verdict and run.json
// as they are and exits 5, saying so.
func TestARunAppendsItselfToTheHistory(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	db := filepath.Join(tmp, "h.db")
	smoke := []string{"-config", "../configs/smoke.toml", "-backend", "mpi"}
	// The ranks run in this process: the append is the run's logic. A run
	// with variables of its own gives them to each rank (inprocEnv), as
	// mpirun's -x would: rank 0 reads RSAG_HISTORY from its own.
	run := func(env []string, args ...string) result {
		return inprocEnv(t, 2, env, 2*time.Minute, append(append([]string{}, smoke...), args...)...)
	}
	other := filepath.Join(tmp, "other.db")
	steps := []struct {
		name   string
		env    []string
		args   []string
		code   int
		status string
	}{
		{"-history", nil, []string{"-history", db}, 0, outdir.StatusComplete},
		// RSAG_HISTORY comes before the config's key.
		{"RSAG_HISTORY", []string{history.Env + "=" + db}, []string{"-set", `history="` + other + `"`}, 0, outdir.StatusComplete},
		{"the config's key", nil, []string{"-set", `history="` + db + `"`}, 0, outdir.StatusComplete},
		// -history comes before RSAG_HISTORY.
		{"a failed run", []string{history.Env + "=" + other}, []string{"-history", db, "-set", "timing.min_busbw_gbps=100000"}, 1, outdir.StatusFailed},
	}
	for i, s := range steps {
		dir := filepath.Join(tmp, "run"+fmt.Sprint(i))
		// Each appended run starts in a second of its own: a run's key in
		// the history is rank 0's host, process id and start, to the
		// second, and these jobs share this process, where runs under
		// mpirun are each a process of their own.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		r := run(s.env, append(s.args, "-output-dir", dir)...)
		if r.code != s.code {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", s.name, r.code, s.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "history: added as run "+fmt.Sprint(i+1)+" ("+s.status+") to "+db) {
			t.Errorf("%s: stdout does not say it was added as run %d:\n%s", s.name, i+1, r.stdout)
		}
	}
	if _, err := os.Stat(other); err == nil {
		t.Errorf("%s was made: RSAG_HISTORY or -history should have come first", other)
	}
	runs := historyRuns(t, db)
	if len(runs) != len(steps) {
		t.Fatalf("%d runs in the history, want %d: %+v", len(runs), len(steps), runs)
	}
	for i, s := range steps {
		if runs[i].Status != s.status || runs[i].BaselineOK != (s.code == 0) || runs[i].Dir != filepath.Join(tmp, "run"+fmt.Sprint(i)) {
			t.Errorf("%s: history has %+v", s.name, runs[i])
		}
	}

	// Refused before anything runs: no output dir, no history file made.
	notSQLite := filepath.Join(tmp, "notes.txt")
	os.WriteFile(notSQLite, []byte("my notes\n"), 0o644)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no such directory", nil, []string{"-history", filepath.Join(tmp, "no", "h.db")}, "-history: history file " + filepath.Join(tmp, "no", "h.db") + ": its directory"},
		{"a directory", []string{history.Env + "=" + tmp}, nil, history.Env + ": history file " + tmp + " is not a regular file"},
		{"not SQLite", nil, []string{"-set", `history="` + notSQLite + `"`}, "the config's history key: history file " + notSQLite + " is not an SQLite database"},
		{":memory:", []string{history.Env + "=:memory:"}, nil, history.Env + `: history file ":memory:": SQLite takes that name as a database in memory`},
		{"a file: URI", nil, []string{"-history", "file:" + filepath.Join(tmp, "victim.db")}, "-history: history file \"file:" + filepath.Join(tmp, "victim.db") + "\": a file: URI is not taken"},
		{"a blank name", nil, []string{"-set", `history="  "`}, `the config's history key: the history file's name is empty ("  ")`},
	} {
		dir := filepath.Join(tmp, "refused")
		r := run(c.env, append(c.args, "-output-dir", dir)...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2\nstderr:\n%s", c.name, r.code, r.stderr)
		}
		saidOnce(t, r.stderr, c.want)
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s: the refused run made %s", c.name, dir)
		}
	}
	if data, _ := os.ReadFile(notSQLite); string(data) != "my notes\n" {
		t.Errorf("%s was changed: %q", notSQLite, data)
	}
	if _, err := os.Stat(filepath.Join(tmp, "no")); err == nil {
		t.Error("a refused -history made its directory")
	}
	if _, err := os.Stat(filepath.Join(tmp, "victim.db")); err == nil {
		t.Error("a refused file: URI made its file")
	}
	// A history inside the run's own output dir, refused before -overwrite
	// removes anything there.
	run0 := filepath.Join(tmp, "run0")
	if r := run(nil, "-history", filepath.Join(run0, "h.db"), "-output-dir", run0, "-overwrite"); r.code != 2 {
		t.Errorf("a history inside the output dir: exit %d, want 2\nstderr:\n%s", r.code, r.stderr)
	} else {
		saidOnce(t, r.stderr, "is inside the run's output dir "+run0)
	}
	if _, err := os.Stat(filepath.Join(run0, "summary.json")); err != nil {
		t.Errorf("the refused run touched %s: %v", run0, err)
	}

	// An append that fails at the end: an rsag history whose runs table
	// refuses every row (a trigger), which the start-up check cannot see.
	bogus := filepath.Join(tmp, "bogus.db")
	hdb, err := history.Open(bogus)
	if err != nil {
		t.Fatal(err)
	}
	hdb.Close()
	sq, err := sql.Open("sqlite", bogus)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sq.Exec("CREATE TRIGGER refuse BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'no more runs'); END"); err != nil {
		t.Fatal(err)
	}
	sq.Close()
	dir := filepath.Join(tmp, "unrecorded")
	r := run(nil, "-history", bogus, "-output-dir", dir)
	if r.code != 5 {
		t.Fatalf("an append that failed: exit %d, want 5\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "rsag: PASSED") || !strings.Contains(r.stderr, "the run's verdict below stands, but it was not added to history "+bogus) ||
		!strings.Contains(r.stderr, "rsag history -append "+dir+" "+bogus) {
		t.Errorf("the failed append is not said as it is\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if rec, err := outdir.ReadRecord(dir); err != nil || rec.Status != outdir.StatusComplete {
		t.Errorf("run.json of the unrecorded run: %+v, %v; want complete", rec, err)
	}
}

// A series of real runs in one history: four appended by four writers at
// once, two that append themselves, then two with a planted slowdown. Every
// row reads back as each run's files have it; rsag history shows the step
// and rsag check flags it, exit 1.
//
// The runs are smoke.toml's at two sizes without the memory phase, on
// ranks in this process: the history is the runs' files and rsag's
// commands, not the launch. slowIn (testdata/slow.c's SLOW_SPEC, in
// memory: inmem.Slow) gives every timed collective of rank 0 a floor of 20 ms,
// so that identical runs measure about the same on an idle machine, and
// plants the slowdown: 400 ms for the 210K direct AllReduce alone, twenty
// times the floor and far above what two CPU hogs on two cores were seen to
// add to a case's median (about 60 ms on a 50 ms floor). Identical runs are
// checked too, each against the one before and against the history, and
// must be judged case by case; how many a loaded machine's noise gets
// flagged is logged, not asserted (it is timing): the gate's false-positive
// rate is measured on known distributions in package baseline.
func TestHistoryOfRunsShowsAPlantedStep(t *testing.T) {
	tmp := t.TempDir()
	db := filepath.Join(tmp, "history.db")
	const floor = "Allreduce:3360:20000,Allreduce:215040:20000,Reduce_scatter_block:1680:20000,Reduce_scatter_block:107520:20000," +
		"Allgather:1680:20000,Allgather:107520:20000"
	slowed := strings.Replace(floor, "Allreduce:215040:20000", "Allreduce:215040:400000", 1)
	const step = "default 210K float32 sum out-of-place per-op direct"
	dirs := map[int]string{}
	var last time.Time
	run := func(i int, spec string, args ...string) {
		t.Helper()
		dirs[i] = filepath.Join(tmp, fmt.Sprintf("run%d", i))
		argv := append([]string{"-config", "../configs/smoke.toml", "-backend", "mpi", "-set", "timing.sizes_bytes=[3360,215040]",
			"-set", "memory.enabled=false", "-output-dir", dirs[i]}, args...)
		// A run's key in the history is rank 0's host, pid and start in
		// whole seconds (history.Run.Key): runs of this one process start
		// in seconds of their own.
		if now := time.Now(); now.Truncate(time.Second).Equal(last.Truncate(time.Second)) {
			time.Sleep(time.Until(now.Truncate(time.Second).Add(time.Second)))
		}
		last = time.Now()
		if r := inprocWith(t, 2, inmem.Faults{Slow: slowIn(0, spec)}, 2*time.Minute, argv...); r.code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", i, r.code, r.stdout, r.stderr)
		}
	}
	rsag := func(args ...string) result {
		t.Helper()
		return runWithin(t, time.Minute, "rsag "+strings.Join(args, " "), func(ctx context.Context) *exec.Cmd {
			return exec.CommandContext(ctx, rsagBin, args...)
		})
	}
	for i := 1; i <= 4; i++ {
		run(i, floor)
	}
	// Four writers at once, each its own process.
	results := make(chan result, 4)
	for i := 1; i <= 4; i++ {
		go func() {
			cmd := exec.Command(rsagBin, "history", "-append", dirs[i], db)
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			if err != nil {
				code = -1
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
			}
			results <- result{stdout: out.String(), code: code}
		}()
	}
	for range 4 {
		if r := <-results; r.code != 0 || !strings.Contains(r.stdout, "appended ") {
			t.Errorf("a parallel writer: exit %d: %s", r.code, r.stdout)
		}
	}
	run(5, floor, "-history", db)
	run(6, floor, "-history", db)
	// Identical runs: each against the one before it, and the last two
	// against the history's last four before them. Every case is judged
	// (none missing, no bad input); the verdicts are timing.
	flagged, unsure, checks := 0, 0, 0
	judge := func(what string, args ...string) {
		t.Helper()
		r := rsag(append([]string{"check", "-tolerance", "0.25"}, args...)...)
		checks++
		switch {
		case r.code == 1 && strings.Contains(r.stdout, "FAIL: "):
			flagged++
			t.Logf("%s: flagged (a loaded machine's noise?):\n%s", what, r.stdout)
		case r.code == 3 && strings.Contains(r.stdout, "inconclusive: none of 4 case(s) slower"):
			unsure++
			t.Logf("%s: inconclusive:\n%s", what, r.stdout)
		case r.code != 0 || !strings.Contains(r.stdout, "ok: none of 4 case(s) slower"):
			t.Errorf("%s: exit %d\n%s%s", what, r.code, r.stdout, r.stderr)
		}
	}
	for i := 2; i <= 6; i++ {
		judge(fmt.Sprintf("run %d against run %d", i, i-1), "-baseline", dirs[i-1], dirs[i])
	}
	for _, i := range []int{5, 6} {
		judge(fmt.Sprintf("run %d against the history", i), "-baseline", db, "-last", "4", dirs[i])
	}
	t.Logf("identical runs: %d of %d checks flagged a case, %d inconclusive", flagged, checks, unsure)
	run(7, slowed, "-history", db)
	run(8, slowed, "-history", db)

	// Every row, read back, is what the run's own files say.
	sq, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	for table, want := range map[string]int{"runs": 8, "cases": 8 * 4, "samples": 8 * 4 * 4, "nodes": 8} {
		var n int
		if err := sq.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil || n != want {
			t.Errorf("%s: %d rows (%v), want %d", table, n, err, want)
		}
	}
	medians := map[int]float64{} // the slowed case's, by run
	for i := 1; i <= 8; i++ {
		r, err := history.LoadRun(dirs[i])
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		var status string
		var ok bool
		if err := sq.QueryRow("SELECT id, status, baseline_ok FROM runs WHERE output_dir = ?", dirs[i]).Scan(&id, &status, &ok); err != nil ||
			status != outdir.StatusComplete || !ok {
			t.Fatalf("run %d (%s): %v, status %q, baseline %v", i, dirs[i], err, status, ok)
		}
		for _, s := range r.Summary.Timing {
			var median float64
			if err := sq.QueryRow("SELECT median_us FROM cases WHERE run_id = ? AND case_text = ?", id, s.Case.String()).Scan(&median); err != nil || median != s.MedianUS {
				t.Errorf("run %d, %s: median %v (%v), summary.json says %v", i, s.Case, median, err, s.MedianUS)
			}
			if s.Case.String() == step {
				medians[i] = median
			}
			rows, err := sq.Query("SELECT s.us FROM samples s JOIN case_ids k ON k.id = s.case_id JOIN cases c ON c.run_id = s.run_id AND c.case_key = k.case_key "+
				"WHERE s.run_id = ? AND c.case_text = ? ORDER BY s.cycle", id, s.Case.String())
			if err != nil {
				t.Fatal(err)
			}
			var got []float64
			for rows.Next() {
				var us float64
				if err := rows.Scan(&us); err != nil {
					t.Fatal(err)
				}
				got = append(got, us)
			}
			rows.Close()
			if fmt.Sprint(got) != fmt.Sprint(r.Samples[s.Case]) {
				t.Errorf("run %d, %s: samples %v in the history, %v in timings.csv", i, s.Case, got, r.Samples[s.Case])
			}
		}
	}
	// The planted step is in the history: every slowed run's median at
	// least twice every other's (the sleep alone is 20 times the floor).
	for _, slow := range []int{7, 8} {
		for i := 1; i <= 6; i++ {
			if !(medians[slow] > 2*medians[i]) {
				t.Errorf("%s: run %d's median %.0f µs is not twice run %d's %.0f µs", step, slow, medians[slow], i, medians[i])
			}
		}
	}

	// rsag history shows it: the case's first and last medians (run 1
	// started first, whichever writer appended it first), and its page.
	first := medians[1]
	r := rsag("history", "-html", filepath.Join(tmp, "history.html"), db)
	if r.code != 0 {
		t.Fatalf("rsag history: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := fmt.Sprintf("| %s     |    8 | %.2f | %.2f |", step, first, medians[8])
	if !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), strings.Join(strings.Fields(want), " ")) {
		t.Errorf("rsag history does not show %q:\n%s", want, r.stdout)
	}
	page, _ := os.ReadFile(filepath.Join(tmp, "history.html"))
	for _, id := range []string{"fig-case-1", "fig-case-4", "fig-node-1"} {
		if !strings.Contains(string(page), `<figure id="`+id+`">`) {
			t.Errorf("the history's page lacks %s", id)
		}
	}
	// rsag check flags it, exit 1, against the history's last four
	// complete runs started before it, and records it flagged: 8's
	// baseline leaves 7 out (and any identical run flagged above). Unless
	// the ranks of the run, or of a run of its baseline, waited for
	// processors (or outnumbered them): a loaded machine's, which its
	// summary.json says (nodes[].waited, nodes[].crowded). Then the step
	// is inconclusive, saying why, exit 3, and the run, whose step looked
	// slower, is held back as a flagged one is: 8's baseline leaves it out.
	dirOf := map[string]string{} // the history's run id: its dir
	for _, r := range historyRuns(t, db) {
		dirOf[fmt.Sprint(r.ID)] = r.Dir
	}
	crowdedRun := func(dir string) bool {
		r, err := history.LoadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		return report.CrowdedNote(r.Summary.Nodes) != ""
	}
	stepRow := func(out string) string {
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "|") && strings.Contains(line, " 210K ") && strings.Contains(line, " direct ") {
				return line
			}
		}
		return ""
	}
	why := regexp.MustCompile(`\[[0-9]+\] inconclusive: [0-9.e+]+x, ranks (waited for|shared) processors`)
	crowded, flaggedRun := map[int]bool{}, map[int]bool{}
	for _, i := range []int{7, 8} {
		r := rsag("check", "-baseline", db, "-last", "4", dirs[i])
		out := unfolded(r.stdout)
		m := regexp.MustCompile(`\(runs ([0-9 ]+)\)`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("run %d: no baseline runs named\n%s%s", i, r.stdout, r.stderr)
			continue
		}
		base := strings.Fields(m[1])
		if slices.Contains(base, "7") != (i == 8 && !flaggedRun[7]) {
			t.Errorf("run %d's baseline (runs %s) is not of runs before it, or holds run 7 (flagged %v)", i, m[1], flaggedRun[7])
		}
		crowded[i] = crowdedRun(dirs[i])
		for _, id := range base {
			crowded[i] = crowded[i] || crowdedRun(dirOf[id])
		}
		switch {
		case slices.Contains(base, "7"):
			// 8 against 7, which was not flagged (crowded), and three
			// runs without the step: within the baseline's spread or
			// beyond it, what holds is that it was judged, and never
			// called slower where ranks were crowded.
			if r.code != 0 && r.code != 1 && r.code != 3 || crowded[i] && (r.code == 1 || strings.Contains(r.stdout, "SLOWER |")) {
				t.Errorf("run %d against a baseline holding run 7 (crowded %v): exit %d\n%s%s", i, crowded[i], r.code, r.stdout, r.stderr)
			}
		case crowded[i]:
			if r.code != 3 || !strings.Contains(out, "inconclusive: none of 4 case(s) slower") || !strings.Contains(stepRow(r.stdout), "inconclusive [") ||
				!why.MatchString(out) || !strings.Contains(out, "note: ") || !strings.Contains(out, "recorded in "+db+": inconclusive") {
				t.Errorf("run %d, its ranks or its baseline's crowded: exit %d, want 3 and the step inconclusive, saying why\n%s%s", i, r.code, r.stdout, r.stderr)
			}
			flaggedRun[i] = strings.Contains(out, "recorded in "+db+": inconclusive, and held back: ")
			t.Logf("run %d: inconclusive, the ranks of the run or of its baseline waited for processors or shared them:\n%s", i, r.stdout)
		default:
			flaggedRun[i] = r.code == 1
			if r.code != 1 || !strings.Contains(r.stdout, "FAIL: ") ||
				!strings.Contains(out, "the run is flagged, and no baseline until: rsag history -accept "+dirs[i]) {
				t.Errorf("run %d: exit %d, want 1, recorded as flagged\n%s%s", i, r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(stepRow(r.stdout), "SLOWER") {
				t.Errorf("run %d: the slowed case is not SLOWER:\n%s", i, r.stdout)
			}
		}
	}
	// The verdicts reach CI and Prometheus: JUnit XML that validates
	// against the published schema, with the slowed case a failed test
	// case (skipped, saying why, when the ranks were crowded), and
	// metrics that promtool passes.
	junit, prom := filepath.Join(tmp, "check.xml"), filepath.Join(tmp, "check.prom")
	code, verdict, slower := 1, "failure", "1"
	if crowded[7] {
		code, verdict, slower = 3, "skipped", "0"
	}
	if r := rsag("check", "-baseline", db, "-last", "4", "-junit", junit, "-metrics", prom, dirs[7]); r.code != code {
		t.Fatalf("check with -junit and -metrics: exit %d, want %d\n%s%s", r.code, code, r.stdout, r.stderr)
	}
	if out, err := command(t, "", "", "xmllint", "--noout", "--schema", "testdata/junit/junit-10.xsd", junit); err != nil {
		t.Errorf("check's JUnit XML does not validate against junit-10.xsd: %v\n%s", err, out)
	}
	if x := readFile(t, junit); !regexp.MustCompile(`(?s)<testcase name="run default 210K [^"]* direct" classname="rsag.baseline">\s*<` + verdict + ` message="[^"]*x`).MatchString(x) {
		t.Errorf("check's JUnit XML does not give the slowed case a %s:\n%s", verdict, x)
	}
	if out, err := command(t, "", readFile(t, prom), "promtool", "check", "metrics"); err != nil {
		t.Errorf("promtool check metrics on check's metrics: %v\n%s", err, out)
	}
	if m := readFile(t, prom); !regexp.MustCompile(`rsag_baseline_slower\{[^}]*mode="direct"[^}]*size_bytes="215040"[^}]*\} ` + slower + `\n`).MatchString(m) {
		t.Errorf("check's metrics do not say the slowed case is slower (%s):\n%s", slower, m)
	}
	// A file that is not rsag's is never replaced without -overwrite.
	notes := filepath.Join(tmp, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := rsag("check", "-baseline", db, "-last", "4", "-junit", notes, dirs[7]); r.code != 2 || !strings.Contains(r.stderr, "is not a file rsag wrote") || readFile(t, notes) != "mine\n" {
		t.Errorf("check -junit over a user's file: exit %d, %q, the file %q", r.code, r.stderr, readFile(t, notes))
	}
}

// slowIn is testdata/slow.c's SLOW_SPEC ("Allreduce:3360:20000,...":
// MPI's call, the bytes it moves, the microseconds rank sleeps before it)
// for ranks in this process: inmem.Slow, which counts bytes as slow.c does.
func slowIn(rank int, spec string) *inmem.Slow {
	names := map[string]string{"Allreduce": coll.AllReduce.Name, "Reduce_scatter_block": coll.ReduceScatter.Name, "Allgather": coll.AllGather.Name}
	type key struct {
		c     string
		bytes int
	}
	delays := map[key]time.Duration{}
	for _, item := range strings.Split(spec, ",") {
		var call string
		var bytes, us int
		if _, err := fmt.Sscanf(strings.ReplaceAll(item, ":", " "), "%s %d %d", &call, &bytes, &us); err != nil || names[call] == "" {
			panic(fmt.Sprintf("slowIn: %q is not CALL:BYTES:MICROSECONDS", item))
		}
		delays[key{names[call], bytes}] = time.Duration(us) * time.Microsecond
	}
	return &inmem.Slow{Rank: rank, Delay: func(c string, bytes int) time.Duration { return delays[key{c, bytes}] }}
}

// lockedBuffer is an output buffer a test reads while the command writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Two runs of one command line started together both reach the history:
// the run key is rank 0's host, process id and start. One is under mpirun,
// in a working directory of its own with -output-dir relative; the other's
// ranks are in this process (its output dir absolute: the process has one
// working directory), whose pid is not the job's rank 0's. Then, with the
// history held by another writer: the run's start does not wait on it, the
// append at the end says it waits, and a SIGTERM then ends rank 0 non-zero
// with the command that adds the run, which does.
func TestHistoryKeepsEveryRunAndASignalLeavesTheAddCommand(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	db := filepath.Join(tmp, "h.db")
	script, err := filepath.Abs("../scripts/mpirun.sh")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := filepath.Abs(rsagBin)
	if err != nil {
		t.Fatal(err)
	}
	config, err := filepath.Abs("../configs/smoke.toml")
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{script, "2", bin, "-config", config, "-backend", "mpi", "-set", "timing.sizes_bytes=[3360]", "-set", "memory.enabled=false",
		"-output-dir", "out", "-history", db}
	start := func(dir string, stdout, stderr io.Writer) *exec.Cmd {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, jobEnv(t), stdout, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		return cmd
	}
	var out0 strings.Builder
	job0 := start(filepath.Join(tmp, "job0"), &out0, &out0)
	r1 := inproc(t, 2, 2*time.Minute, append(append([]string{}, argv[3:len(argv)-4]...), "-output-dir", filepath.Join(tmp, "job1", "out"), "-history", db)...)
	if err := job0.Wait(); err != nil {
		t.Fatalf("the job under mpirun: %v\n%s", err, out0.String())
	}
	if r1.code != 0 {
		t.Fatalf("the job in this process: exit %d\n%s%s", r1.code, r1.stdout, r1.stderr)
	}
	if runs := historyRuns(t, db); len(runs) != 2 {
		t.Fatalf("%d runs in the history after two runs started together, want 2: %+v\n%s\n%s%s", len(runs), runs, out0.String(), r1.stdout, r1.stderr)
	}
	// A 4-rank run is judged against no 2-rank run: refused, the
	// difference named, never SLOWER.
	four := filepath.Join(tmp, "four")
	if r := inproc(t, 4, 2*time.Minute, append([]string{"-output-dir", four}, argv[3:len(argv)-4]...)...); r.code != 0 {
		t.Fatalf("the 4-rank run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, base := range []string{db, filepath.Join(tmp, "job0", "out")} {
		b, err := exec.Command(bin, "check", "-baseline", base, four).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(b), "world size 4, not 2") || strings.Contains(string(b), "SLOWER") {
			t.Errorf("check of a 4-rank run against %s: %v, want exit 2 naming the world size\n%s", base, err, b)
		}
	}

	// Another writer holds the history.
	sq, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	conn, err := sq.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "held")
	var stdout, stderr lockedBuffer
	cmd := start(dir, &stdout, &stderr)
	out := filepath.Join(dir, "out")
	deadline := time.Now().Add(2 * time.Minute) // the run, on a loaded machine, then the append's wait
	for !strings.Contains(strings.Join(strings.Fields(stdout.String()), " "), "history: "+db+" is held by another writer: waiting") {
		if time.Now().After(deadline) {
			t.Fatalf("the append did not say it waits\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	rec, err := outdir.ReadRecord(out)
	if err != nil || rec.PID == 0 {
		t.Fatalf("run.json: %+v, %v", rec, err)
	}
	if err := syscall.Kill(rec.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	add := "rsag history -append " + "out" + " " + db
	var ee *exec.ExitError
	// Read whole: rsag folds what it says on stderr (issue 57).
	said := unfold(stderr.String())
	if !errors.As(err, &ee) || ee.ExitCode() != 5 || !strings.Contains(said, "received SIGTERM while adding the run to history "+db) ||
		!strings.Contains(said, add) {
		t.Errorf("a SIGTERM during the append: %v, want exit 5 with %q\nstderr:\n%s", err, add, stderr.String())
	}
	// The run's verdict is still said, and last, after the append's word.
	if lines := strings.Split(strings.TrimSpace(stdout.String()), "\n"); !strings.HasPrefix(lines[len(lines)-1], "rsag: PASSED") {
		t.Errorf("the last line after a SIGTERM during the append is not the run's verdict:\n%s", stdout.String())
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if runs := historyRuns(t, db); len(runs) != 2 {
		t.Errorf("%d runs after the stopped append, want 2", len(runs))
	}
	add1 := exec.Command(bin, "history", "-append", "out", db)
	add1.Dir = dir
	if b, err := add1.CombinedOutput(); err != nil || !strings.Contains(string(b), "appended out as run 3 (complete)") {
		t.Errorf("the command it gave: %v\n%s", err, b)
	}
}

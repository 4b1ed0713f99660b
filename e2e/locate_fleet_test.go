package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rsag/report"
)

// The fleet tests run the locate phase on 16 emulated hosts of one rank
// each (issue 36, item 4): two faults at once, with every pair and with
// the sampled schedule, a host whose rate limit comes and goes, and clean
// runs. Sixteen ranks on a machine of a few cores take minutes a run, so
// they are off unless RSAG_FLEET_TESTS=1 (and root, for the hosts):
//
//	RSAG_FLEET_TESTS=1 RSAG_BIN=$PWD/rsag scripts/with-mpi-flags.sh \
//	  go test -count=1 -v -timeout 60m -run 'TestLocateFleet' ./e2e/
//
// RSAG_FLEET_CLEAN_RUNS sets how many clean runs TestLocateFleetClean
// takes (3 by default); RSAG_FLEET_KEEP, a directory, keeps a copy of
// every run's output dir there. docs/locate.md records what they gave.
const fleetNodes = 16

// The faults: node5's eth0 rate-limited (a slow host), and node11's eth0
// limited towards node12 only (a slow link). Both pairs are ring
// neighbours, in every schedule, full or sampled; neither host is a
// partner of the other fault's in the sampled one (strides 1, 4, 8).
const (
	fleetSlowHost = "node5"
	fleetLinkFrom = "node11"
	fleetLinkTo   = "node12"
	fleetFlapHost = "node7"
)

// sampled makes 16 nodes take the sampled schedule: strides 1, 4 and 8,
// five rounds, every node meeting 5 others.
var sampled = []string{"locate.max_full_nodes=8", "locate.min_partners=4"}

func fleet(t *testing.T) *locateRun {
	t.Helper()
	if os.Getenv("RSAG_FLEET_TESTS") != "1" {
		t.Skip("the 16-host locate tests are off (minutes a run on a few cores): set RSAG_FLEET_TESTS=1, RSAG_BIN and run as root; see docs/locate.md")
	}
	t0 := time.Now()
	l := newLocateRun(t, fleetNodes)
	l.limit = 9 * time.Minute
	t.Logf("%d hosts up in %.1f s", fleetNodes, time.Since(t0).Seconds())
	return l
}

// fleetRun is run on one rank a host, logging the machine's load before
// and after, and the phase's schedule and time.
func (l *locateRun) fleetRun(t *testing.T, tr *trigger, sets ...string) (located, report.Summary) {
	t.Helper()
	before := loadavg()
	r, s := l.runWith(t, 1, nil, nil, tr, append([]string{"locate.iterations=5"}, sets...)...)
	var sched string
	for _, st := range s.Locate.Steps {
		if st.Name == "pairs" {
			sched = fmt.Sprintf("%s, %d rounds", st.Schedule, st.Rounds)
		}
	}
	t.Logf("run %d (%s): exit %d, %.1f s (locate %.1f s, pairs %s, %d repeats); load before %s, after %s; verdict %s, suspects %q, intermittent %q",
		l.n, strings.Join(sets, " "), r.code, r.took.Seconds(), s.Locate.Seconds, sched, s.Locate.Repeats, before, loadavg(),
		s.Locate.Verdict, report.SuspectTexts(s.Locate), report.IntermittentTexts(s.Locate))
	if keep := os.Getenv("RSAG_FLEET_KEEP"); keep != "" {
		dst := filepath.Join(keep, fmt.Sprintf("%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), l.n))
		if out, err := exec.Command("cp", "-a", r.dir, dst).CombinedOutput(); err != nil {
			t.Errorf("keeping %s: %v\n%s", r.dir, err, out)
		}
	}
	return r, s
}

// loadavg is the 1-, 5- and 15-minute load averages.
func loadavg() string {
	f := strings.Fields(readText("/proc/loadavg"))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// wantPairsSchedule checks the between-nodes step ran the schedule kind
// ("full" or "sampled") in rounds.
func wantPairsSchedule(t *testing.T, s report.Summary, kind string, rounds int) {
	t.Helper()
	for _, st := range s.Locate.Steps {
		if st.Name == "pairs" {
			if !st.Ran || !strings.HasPrefix(st.Schedule, kind) || st.Rounds != rounds {
				t.Errorf("pairs step %+v, want it run %s in %d rounds", st, kind, rounds)
			}
			return
		}
	}
	t.Errorf("no pairs step in %+v", s.Locate.Steps)
}

func wantNoIntermittent(t *testing.T, s report.Summary, r located) {
	t.Helper()
	if len(s.Locate.Intermittent) > 0 || strings.Contains(r.stdout, "intermittent: ") {
		t.Errorf("intermittent %q, want none\n%s", report.IntermittentTexts(s.Locate), locateOutput(r.stdout))
	}
}

// A slow host and a slow link at once, on 16 hosts: both named, nothing
// else, with every pair (15 rounds) and sampled (5 rounds).
func TestLocateFleetTwoFaults(t *testing.T) {
	l := fleet(t)
	l.tc(t, fleetSlowHost, "qdisc add dev eth0 root tbf rate 10mbit burst 16kb latency 400ms")
	l.tc(t, fleetLinkFrom, "qdisc add dev eth0 root handle 1: htb")
	l.tc(t, fleetLinkFrom, "class add dev eth0 parent 1: classid 1:20 htb rate 10mbit")
	l.tc(t, fleetLinkFrom, "filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst "+hostAddr(fleetLinkTo)+"/32 flowid 1:20")
	want := []string{"node " + fleetSlowHost + " bandwidth", "link " + fleetLinkFrom + "-" + fleetLinkTo + " bandwidth"}
	for _, c := range []struct {
		name, kind string
		rounds     int
		sets       []string
	}{
		{"every pair", "full", fleetNodes - 1, nil},
		{"sampled", "sampled", 5, sampled},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, s := l.fleetRun(t, nil, c.sets...)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			wantPairsSchedule(t, s, c.kind, c.rounds)
			wantSuspects(t, s, r, want)
			wantNoIntermittent(t, s, r)
			if s.Locate.Verdict != "suspects" {
				t.Errorf("verdict %q, want suspects", s.Locate.Verdict)
			}
		})
	}
}

// flapRepeats: 9 or more say a flapping fault (docs/locate.md).
const flapRepeats = 9

// flapOn and flapOff are what node7 sends in about one and a half
// repeats of the phase's 15 rounds (each round two AllReduces, 4K and
// 64K, five times), and in a little more than one: 48.8 MB in 9 repeats,
// measured. An on-period of 22 rounds holds 8 or more of some repeat's 15,
// a slow repeat; an off-period of 16 holds 8 or more of one, a repeat that
// is not slow; the phase holds four on-periods.
const (
	flapOn  = 8 << 20
	flapOff = 6 << 20
)

// A host whose rate limit a loop adds and removes, again and again. The
// loop starts with the phase.
//
// Paced by what the host sends, each on-period holds most of at least one
// repeat's rounds and each off-period as much, whatever the load: the host
// is intermittent, with its count, and no suspect; its pairs are its own,
// no link's.
//
// Paced by time (on 5 s, off 2 s), as a real fault is, it is not named at
// all here: a round with the limit takes about 0.3 s and one without 5 to
// 50 ms, so an on-period holds about one repeat and an off-period all the
// others (docs/locate.md: one slow repeat of 9, fewer than the 3 the rule
// wants). What holds then is what the test asserts: no suspect, and
// nothing but that host intermittent.
func TestLocateFleetFlapping(t *testing.T) {
	l := fleet(t)
	for _, c := range []struct {
		name    string
		on, off period
		named   bool // the host must be named intermittent
	}{
		{"paced by its traffic", period{Bytes: flapOn}, period{Bytes: flapOff}, true},
		{"every few seconds", period{Time: 5 * time.Second}, period{Time: 2 * time.Second}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			start, stop := l.flap(t, fleetFlapHost, "tbf rate 10mbit burst 16kb latency 400ms", c.on, c.off)
			r, s := l.fleetRun(t, &trigger{"locate: between nodes", start}, fmt.Sprintf("locate.repeats=%d", flapRepeats))
			added, sent := stop()
			t.Logf("the loop added %s's tbf %d times (on %v, off %v); it sent %d bytes meanwhile", fleetFlapHost, added, c.on, c.off, sent)
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			wantPairsSchedule(t, s, "full", fleetNodes-1)
			wantSuspects(t, s, r, nil)
			for _, in := range s.Locate.Intermittent {
				if in.Kind != "node" || len(in.Nodes) != 1 || in.Nodes[0] != fleetFlapHost {
					t.Errorf("intermittent %q: %s is not %s", in.Text, in.Kind, fleetFlapHost)
				}
			}
			if !c.named {
				t.Logf("%s: verdict %s, intermittent %q", fleetFlapHost, s.Locate.Verdict, report.IntermittentTexts(s.Locate))
				return
			}
			if len(s.Locate.Intermittent) != 1 {
				t.Fatalf("intermittent %q, want %s alone\n%s", report.IntermittentTexts(s.Locate), fleetFlapHost, locateOutput(r.stdout))
			}
			in := s.Locate.Intermittent[0]
			if in.Repeats != flapRepeats || in.SlowRepeats < 1 || in.SlowRepeats >= flapRepeats {
				t.Errorf("intermittent %+v, want %s slow in some of %d repeats", in, fleetFlapHost, flapRepeats)
			}
			line := fmt.Sprintf("intermittent: %s slow in %d of %d repeats, %s", fleetFlapHost, in.SlowRepeats, flapRepeats, in.Problem)
			if !strings.Contains(r.stdout, line) {
				t.Errorf("stdout lacks %q\n%s", line, locateOutput(r.stdout))
			}
			if s.Locate.Verdict != "intermittent" {
				t.Errorf("verdict %q, want intermittent", s.Locate.Verdict)
			}
		})
	}
}

// Clean runs on 16 hosts name no suspect and nothing intermittent, with
// every pair, sampled, and with nine repeats, in turn.
func TestLocateFleetClean(t *testing.T) {
	l := fleet(t)
	runs := 3
	if v := os.Getenv("RSAG_FLEET_CLEAN_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("RSAG_FLEET_CLEAN_RUNS=%q: want a count", v)
		}
		runs = n
	}
	kinds := [][]string{{"locate.fail_on_suspect=true"}, append([]string{"locate.fail_on_suspect=true"}, sampled...),
		{"locate.fail_on_suspect=true", "locate.repeats=9"}}
	for i := range runs {
		r, s := l.fleetRun(t, nil, kinds[i%len(kinds)]...)
		if r.code != 0 {
			t.Errorf("clean run %d: exit %d\nstdout:\n%s\nstderr:\n%s", i+1, r.code, r.stdout, r.stderr)
		}
		wantSuspects(t, s, r, nil)
		wantNoIntermittent(t, s, r)
		if v := s.Locate.Verdict; v != "healthy" && v != "inconclusive" {
			t.Errorf("clean run %d: verdict %q", i+1, v)
		}
	}
}

// hostAddr is an emulated node's address (scripts/hosts.sh).
func hostAddr(node string) string {
	return "10.77.0." + strings.TrimPrefix(node, "node")
}

// period is how long a state of flap lasts: until the host has sent
// Bytes more, or for Time when Bytes is 0.
type period struct {
	Bytes int64
	Time  time.Duration
}

func (p period) String() string {
	if p.Bytes > 0 {
		return fmt.Sprintf("%d bytes", p.Bytes)
	}
	return p.Time.String()
}

// flap adds qdisc (a root qdisc's words after "root") to host's eth0 and
// keeps it for on, removes it for off, and again. Paced by the traffic, an
// on- or off-period spans the same rounds of the phase whatever the
// machine's speed; paced by time, as a real fault is, it spans more rounds
// unloaded than loaded. start begins the loop; stop ends it, removes the
// qdisc and says how many times it was added and what host sent
// meanwhile. The loop ends, and the qdisc is removed, when the test ends
// too.
func (l *locateRun) flap(t *testing.T, host, qdisc string, on, off period) (start func(), stop func() (int, int64)) {
	t.Helper()
	// Any process on host sees its network namespace's counters; before
	// the job, its holder is the only one.
	pids := l.h.PIDs(t, host)
	if len(pids) == 0 {
		t.Fatalf("no process on %s", host)
	}
	dev := fmt.Sprintf("/proc/%d/net/dev", pids[0])
	sent := func() int64 {
		for _, line := range strings.Split(readText(dev), "\n") {
			if name, rest, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && name == "eth0" {
				if f := strings.Fields(rest); len(f) >= 9 {
					n, _ := strconv.ParseInt(f[8], 10, 64)
					return n
				}
			}
		}
		t.Errorf("no eth0 in %s", dev)
		return 0
	}
	tc := func(args ...string) error {
		out, err := l.h.Output(host, 10*time.Second, "tc", args...)
		if err != nil {
			return fmt.Errorf("tc %s on %s: %v\n%s", strings.Join(args, " "), host, err, out)
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	added, first, last := 0, int64(0), int64(0)
	// until waits for p to pass, or the loop to end.
	until := func(p period) bool {
		from, t0 := sent(), time.Now()
		for {
			select {
			case <-ctx.Done():
				return false
			case <-time.After(10 * time.Millisecond):
			}
			if p.Bytes > 0 && sent()-from >= p.Bytes || p.Bytes == 0 && time.Since(t0) >= p.Time {
				return true
			}
		}
	}
	start = func() {
		first = sent()
		t0 := time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if err := tc(append([]string{"qdisc", "add", "dev", "eth0", "root"}, strings.Fields(qdisc)...)...); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				added++
				mu.Unlock()
				t.Logf("%5.1f s: %s's %s added", time.Since(t0).Seconds(), host, strings.Fields(qdisc)[0])
				ok := until(on)
				if err := tc("qdisc", "del", "dev", "eth0", "root"); err != nil {
					t.Error(err)
					return
				}
				t.Logf("%5.1f s: removed", time.Since(t0).Seconds())
				if !ok || !until(off) {
					return
				}
			}
		}()
	}
	var once sync.Once
	stop = func() (int, int64) {
		once.Do(func() { cancel(); wg.Wait(); last = sent() })
		mu.Lock()
		defer mu.Unlock()
		return added, last - first
	}
	t.Cleanup(func() { stop() })
	return start, stop
}

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rsag/internal/cadence"
)

// Deadlines a test can shorten. The tests that wait on a product deadline
// (a hang, a watchdog, MPI's start-up, a soak's progress) run fastRsag, a
// binary whose cadences (internal/cadence: beats, heartbeats, lingers,
// silences) are cadence.FastBy times shorter, and give timeout_s in
// fractions of a second; none of them waits more than 2 s on any one
// deadline. Exactly one test per deadline keeps the real cadence, on the
// product binary (rsagBin), and says so in its name (RealCadence):
//
//   - beats, silences and a hang's naming (BeatEvery, SilentAfter,
//     StopLookEvery) and timeout_s of whole seconds:
//     TestAStoppedRankIsNamedRealCadence;
//   - the watchdog and its linger (WatchdogLinger):
//     TestWatchdogEndsAStalledRankRealCadence.
//
// The full tier (make test-full) runs every test on the product binary.

// fastBeat is a beat of fastRsag's build.
const fastBeat = cadence.RealBeatEvery / cadence.FastBy

// beatOf is a beat of bin's build: fastBeat for the short-cadence build,
// the real one for the product binary (which fastRsag is in the full tier).
func beatOf(bin string) time.Duration {
	if bin == rsagBin {
		return cadence.RealBeatEvery
	}
	return fastBeat
}

// within is -set timeout_s's value for a test on fastRsag: s seconds on
// the short cadence, FastBy times that in the full tier, whose fastRsag is
// the product binary: its beats and silences are that much longer, and a
// deadline of the short cadence's fires before a stopped rank is known.
func within(s float64) string {
	if fullTier() {
		s *= cadence.FastBy
	}
	return strconv.FormatFloat(s, 'f', -1, 64)
}

var fastBuild struct {
	once     sync.Once
	dir, bin string
	err      error
}

// fastRsag is rsag built with -tags rsag_fastcadence: the one
// RSAG_FAST_BIN names (built as the Makefile builds RSAG_BIN, with the tag
// added, and named as it is: a test finds a job's ranks by the name of
// their executable), or one built once for the whole package, into a temporary dir
// TestMain removes (about 6 s on 2 cores with go's cache warm). In the full
// tier, the product binary.
func fastRsag(t testing.TB) string {
	t.Helper()
	if fullTier() {
		return rsagBin
	}
	if bin := os.Getenv("RSAG_FAST_BIN"); bin != "" {
		return bin
	}
	fastBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "rsag-fastcadence")
		if err != nil {
			fastBuild.err = err
			return
		}
		// The same name as the product binary: the tests find a job's ranks
		// by their executable's name (job.rankPID).
		fastBuild.dir, fastBuild.bin = dir, filepath.Join(dir, filepath.Base(rsagBin))
		if out, err := exec.Command("go", "build", "-tags", buildTags("rsag_fastcadence"), "-o", fastBuild.bin, "..").CombinedOutput(); err != nil {
			fastBuild.err = fmt.Errorf("building rsag with -tags rsag_fastcadence: %v\n%s", err, out)
		}
	})
	if fastBuild.err != nil {
		t.Fatal(fastBuild.err)
	}
	return fastBuild.bin
}

// removeFastRsag removes fastRsag's build, once the tests have ended.
func removeFastRsag() {
	if fastBuild.dir != "" {
		os.RemoveAll(fastBuild.dir)
	}
}

// buildTags is the tags GOFLAGS gives (the Makefile's rsag_mpicc), with
// more: a -tags on go build's command line replaces GOFLAGS' own.
func buildTags(more ...string) string {
	var tags []string
	for _, f := range strings.Fields(os.Getenv("GOFLAGS")) {
		if v, ok := strings.CutPrefix(f, "-tags="); ok {
			tags = append(tags, strings.Split(v, ",")...)
		} else if v, ok := strings.CutPrefix(f, "--tags="); ok {
			tags = append(tags, strings.Split(v, ",")...)
		}
	}
	return strings.Join(append(tags, more...), ",")
}

// startJobOf is startJob with the binary bin.
func startJobOf(t *testing.T, bin string, np int, env []string, args ...string) *job {
	t.Helper()
	cmd := exec.Command("../scripts/mpirun.sh", append([]string{strconv.Itoa(np), bin}, args...)...)
	cmd.Env = jobEnv(t, env...)
	return startCmd(t, cmd)
}

// startStalledOf is startStalled with the binary bin and extra
// environment for the job.
func startStalledOf(t *testing.T, bin string, np int, env, mpirunArgs []string, args ...string) *job {
	t.Helper()
	argv := append(append(append([]string{strconv.Itoa(np)}, mpirunArgs...), bin), args...)
	cmd := exec.Command("../scripts/mpirun.sh", argv...)
	cmd.Env = jobEnv(t, env...)
	return startCmd(t, cmd)
}

// launchWithOf is launchWith with the binary bin.
func launchWithOf(t *testing.T, bin string, np int, limit time.Duration, mpirunArgs []string, args ...string) result {
	t.Helper()
	argv := append(append(append([]string{"../scripts/mpirun.sh", strconv.Itoa(np)}, mpirunArgs...), bin), args...)
	return launch(t, limit, argv...)
}

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"rsag/outdir"
	"rsag/report"
)

// TestOperatorFiles checks rsag.prom and junit.xml with the real programs
// (make test installs them, scripts/install-deps.sh --test): a smoke run
// on two ranks whose bus-bandwidth gate fails (so that the run fails and
// both files must say so) writes rsag.prom into a textfile directory;
// node_exporter, started on a free loopback port with its textfile
// collector on that directory, serves rsag's families with the summary's
// values; promtool check metrics passes on the file; the alert rules of
// docs/operators.md pass promtool check rules, and promtool test rules
// fires RsagRunFailed on the run's own metrics; junit.xml validates
// against the published junit-10.xsd with xmllint and shows the gate as a
// failed test case.
func TestOperatorFiles(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"prometheus-node-exporter", "promtool", "xmllint"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: scripts/install-deps.sh --test installs it", tool)
		}
	}
	dir, textfiles := filepath.Join(t.TempDir(), "out"), t.TempDir()
	// The run's ranks are in this process: what the files say is the run's
	// logic; the real programs read them.
	r := inproc(t, 2, time.Minute, "-config", "../configs/smoke.toml", "-backend", "mpi", "-output-dir", dir,
		"-set", "metrics_dir="+textfiles, "-set", "timing.min_busbw_gbps=100000")
	if r.code == 0 {
		t.Fatalf("a failed gate exited 0\nstderr:\n%s", r.stderr)
	}
	run, err := outdir.ReadRecord(dir)
	if err != nil || run.Status != outdir.StatusFailed {
		t.Fatalf("%s: %+v, %v; want failed", outdir.RunFile, run, err)
	}
	data, err := os.ReadFile(filepath.Join(dir, report.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := report.ReadSummary("summary.json", data)
	if err != nil {
		t.Fatal(err)
	}
	prom := filepath.Join(textfiles, report.PromFile)
	if a, b := readFile(t, prom), readFile(t, filepath.Join(dir, report.PromFile)); a != b {
		t.Errorf("the textfile directory's rsag.prom differs from the output dir's")
	}

	if out, err := command(t, "", readFile(t, prom), "promtool", "check", "metrics"); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	families := scrapeNodeExporter(t, textfiles)
	if f := families["node_textfile_scrape_error"]; f == nil || f.Metric[0].GetGauge().GetValue() != 0 {
		t.Errorf("node_exporter's textfile collector reports an error: %v", f)
	}
	value := func(name string, labels map[string]string) (float64, bool) {
		f := families[name]
		if f == nil {
			return 0, false
		}
	metrics:
		for _, m := range f.Metric {
			for k, v := range labels {
				found := false
				for _, lp := range m.Label {
					found = found || (lp.GetName() == k && lp.GetValue() == v)
				}
				if !found {
					continue metrics
				}
			}
			return m.GetGauge().GetValue(), true
		}
		return 0, false
	}
	want := func(name string, labels map[string]string, w float64) {
		t.Helper()
		if got, ok := value(name, labels); !ok || got != w {
			t.Errorf("node_exporter serves %s%v = %v (found %v), want %v", name, labels, got, ok, w)
		}
	}
	want("rsag_run_status", map[string]string{"status": "failed"}, 1)
	want("rsag_run_status", map[string]string{"status": "complete"}, 0)
	// The run's list of verdicts: its outcome, and the gate's check failed.
	want("rsag_verdict", map[string]string{"outcome": "failed"}, 1)
	want("rsag_verdict", map[string]string{"outcome": "held"}, 0)
	want("rsag_phase_checks", map[string]string{"phase": "timing", "outcome": "failed"}, 1)
	want("rsag_inconclusive", nil, 0)
	want("rsag_run_ranks", nil, 2)
	for _, c := range sum.Contracts {
		want("rsag_contract_held", map[string]string{"contract": c.Name}, 1)
	}
	for _, st := range sum.Timing {
		l := map[string]string{"mode": string(st.Mode), "size_bytes": fmt.Sprint(st.SizeBytes), "dtype": st.DType.String()}
		want("rsag_collective_busbw_bytes_per_second", l, st.BusBWGBps*1e9)
		want("rsag_collective_median_seconds", l, st.MedianUS/1e6)
	}
	for _, f := range sum.Fits {
		if f.OK() {
			want("rsag_fit_bandwidth_bytes_per_second", map[string]string{"mode": string(f.Mode)}, f.BandwidthGBps*1e9)
		}
	}
	want("rsag_gate_passed", map[string]string{"mode": "direct", "size_bytes": "1075200"}, 0)

	// The alert rules of docs/operators.md, checked and run on these metrics.
	rulesDir := t.TempDir()
	rules := writeFile(t, rulesDir, "rsag-rules.yml", yamlBlock(t, "../docs/operators.md", "groups:"))
	if out, err := command(t, "", "", "promtool", "check", "rules", rules); err != nil {
		t.Errorf("promtool check rules on docs/operators.md's rules: %v\n%s", err, out)
	}
	var series []string
	for _, name := range []string{"rsag_run_status", "rsag_contract_held"} {
		for _, m := range families[name].Metric {
			var l []string
			for _, lp := range m.Label {
				l = append(l, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			series = append(series, fmt.Sprintf("      - series: '%s{%s}'\n        values: '%v+0x10'\n", name, strings.Join(l, ","), m.GetGauge().GetValue()))
		}
	}
	tests := writeFile(t, rulesDir, "rsag-rules-test.yml", "rule_files: ["+rules+"]\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n"+
		strings.Join(series, "")+"    alert_rule_test:\n      - eval_time: 5m\n        alertname: RsagRunFailed\n        exp_alerts:\n"+
		"          - exp_labels: {severity: page, status: failed}\n            exp_annotations: {summary: \"rsag on : the health check failed\"}\n"+
		"      - eval_time: 5m\n        alertname: RsagContractFailed\n        exp_alerts: []\n")
	if out, err := command(t, "", "", "promtool", "test", "rules", tests); err != nil {
		t.Errorf("promtool test rules: %v\n%s", err, out)
	}

	junit := filepath.Join(dir, report.JUnitFile)
	if out, err := command(t, "", "", "xmllint", "--noout", "--schema", "testdata/junit/junit-10.xsd", junit); err != nil {
		t.Errorf("junit.xml does not validate against junit-10.xsd: %v\n%s", err, out)
	}
	x := readFile(t, junit)
	for _, re := range []string{`<testsuite name="run" tests="1" failures="1"`, `<testsuite name="contracts" tests="5" failures="0"`,
		`(?s)<testcase name="gate run default 1050K float32 sum out-of-place per-op: busbw &gt;= 100000.00 GB/s" classname="rsag.timing">\s*<failure message="run default 1050K [^"]*min_busbw_gbps 100000.00" type="gate">`} {
		if !regexp.MustCompile(re).MatchString(x) {
			t.Errorf("junit.xml lacks %s:\n%s", re, x)
		}
	}
}

// scrapeNodeExporter starts node_exporter with only its textfile collector
// on dir, and returns what it serves, parsed by Prometheus' own text
// parser; it stops it when done. The test holds the listening socket and
// hands it over as systemd would (--web.systemd-socket, fd 3, LISTEN_PID
// set by the shell that execs it): no free port to pick, so none to lose
// to another process before node_exporter binds it.
func scrapeNodeExporter(t *testing.T, dir string) map[string]*dto.MetricFamily {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sock, err := l.(*net.TCPListener).File()
	l.Close() // sock is a copy of it
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$@"`, "sh", "prometheus-node-exporter",
		"--web.systemd-socket", "--collector.disable-defaults", "--collector.textfile", "--collector.textfile.directory="+dir)
	cmd.ExtraFiles = []*os.File{sock} // fd 3
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	err = cmd.Start()
	sock.Close() // node_exporter's alone now: should it exit, a request is refused, not left waiting
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	defer func() { cancel(); <-done }()
	// The socket already listens: a request waits in its backlog until
	// node_exporter accepts it.
	client := http.Client{Timeout: time.Minute}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("node_exporter did not serve /metrics on %s: %v\n%s", addr, err, log.String())
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing node_exporter's /metrics: %v\n%s", err, body)
	}
	return families
}

// yamlBlock is the first ```yaml block of a doc that starts with start.
func yamlBlock(t *testing.T, doc, start string) string {
	t.Helper()
	for _, b := range strings.Split(readFile(t, doc), "```yaml\n")[1:] {
		b, _, _ = strings.Cut(b, "```")
		if strings.HasPrefix(b, start) {
			return b
		}
	}
	t.Fatalf("%s has no ```yaml block starting %q", doc, start)
	return ""
}

func command(t *testing.T, dir, stdin string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An inconclusive run says so in every output: locate on one host cannot
// judge its one node (too few units, whatever the machine's noise), names
// no suspect and fails nothing. The run exits 0 (docs/outputs.md), but the
// verdict line says INCONCLUSIVE (never PASSED, never "no suspect" alone),
// junit.xml skips the node's case as inconclusive, rsag.prom has
// rsag_verdict{outcome="inconclusive"} 1 and rsag_inconclusive 1, and the
// page's banner is not held.
func TestInconclusiveRunSaysSoEverywhere(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "out")
	r := inproc(t, 2, 2*time.Minute, "-config", "../configs/locate.toml", "-backend", "mpi", "-output-dir", dir,
		"-set", "locate.iterations=3")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	v := verdict(t, r.stdout)
	if v == nil || v[1] != "INCONCLUSIVE" || !strings.Contains(r.stdout, "rsag: INCONCLUSIVE: locate could not judge: ") {
		t.Errorf("the verdict line is not INCONCLUSIVE, naming locate:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "PASSED") {
		t.Errorf("an inconclusive run says PASSED:\n%s", r.stdout)
	}
	junit := filepath.Join(dir, report.JUnitFile)
	if out, err := command(t, "", "", "xmllint", "--noout", "--schema", "testdata/junit/junit-10.xsd", junit); err != nil {
		t.Errorf("junit.xml does not validate against junit-10.xsd: %v\n%s", err, out)
	}
	x := readFile(t, junit)
	if !regexp.MustCompile(`(?s)<testsuite name="locate" [^>]*failures="0" [^>]*skipped="[1-9]`).MatchString(x) ||
		!regexp.MustCompile(`(?s)<testcase name="[^"]+" classname="rsag.locate">\s*<skipped message="inconclusive: [^"]+" type="inconclusive">`).MatchString(x) {
		t.Errorf("junit.xml does not skip locate's node as inconclusive:\n%s", x)
	}
	m := readFile(t, filepath.Join(dir, report.PromFile))
	for _, want := range []string{`rsag_verdict{outcome="inconclusive"} 1`, `rsag_verdict{outcome="held"} 0`, "rsag_inconclusive 1",
		`rsag_run_status{status="complete"} 1`} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("rsag.prom lacks %s:\n%s", want, m)
		}
	}
	if page := readFile(t, filepath.Join(dir, "report.html")); !strings.Contains(page, `data-verdict="inconclusive"`) {
		t.Error("report.html's banner is not inconclusive")
	}
}

package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"rsag/coll"
	"rsag/internal/atomicfile"
)

// PromFile is the run's metrics in Prometheus' text exposition format,
// for node_exporter's textfile collector (docs/operators.md).
const PromFile = "rsag.prom"

// rsag.prom registers itself: a last output, since it states the run's
// status, which must be run.json's final one. With a metrics dir (the
// config's metrics_dir), the same file is also written there, atomically,
// as the textfile collector requires.
func init() {
	Register(Output{Stage: Last, Patterns: []string{PromFile}, Ended: true, Plan: func(in Input) ([]string, func(string) error) {
		return []string{PromFile}, func(dir string) error {
			var b bytes.Buffer
			if err := EncodeMetrics(&b, *in.Summary, in.Gates); err != nil {
				return fmt.Errorf("writing %s: %w", PromFile, err)
			}
			dirs := []string{dir}
			if in.MetricsDir != "" {
				dirs = append(dirs, in.MetricsDir)
			}
			for _, d := range dirs {
				if err := atomicfile.Write(filepath.Join(d, PromFile), b.Bytes()); err != nil {
					return fmt.Errorf("writing %s: %w", filepath.Join(d, PromFile), err)
				}
			}
			return nil
		}
	}})
}

// Statuses are the states a finished run's status may be in: rsag.prom
// gives each its own series (1 for the run's, 0 for the others), so that
// an alert on a failed run needs no regular expression.
var Statuses = []string{"complete", "failed"}

// metrics is one registry of gauges, each family declared once with its
// help and labels; the client library checks names, label sets and
// duplicates when it gathers them.
type metrics struct {
	reg  *prometheus.Registry
	vecs map[string]*prometheus.GaugeVec
	err  error
}

func (m *metrics) set(name, help string, labels []string, values []string, v float64) {
	vec, ok := m.vecs[name]
	if !ok {
		vec = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
		if err := m.reg.Register(vec); err != nil && m.err == nil {
			m.err = fmt.Errorf("metric %s: %w", name, err)
		}
		m.vecs[name] = vec
	}
	g, err := vec.GetMetricWithLabelValues(values...)
	if err != nil {
		if m.err == nil {
			m.err = fmt.Errorf("metric %s: %w", name, err)
		}
		return
	}
	g.Set(v)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// caseLabels are the labels of a timed case or a fit: its run, mode and
// every dimension of coll.Dims (named as Prometheus allows), and its size
// when size is true. They are bounded by the config's sweep.
func caseLabels(size bool) []string {
	l := []string{"mode"}
	for _, d := range coll.Dims {
		l = append(l, strings.ReplaceAll(d.Name, " ", "_"))
	}
	if size {
		l = append(l, "size_bytes")
	}
	return l
}

func caseValues(c coll.Case, size bool) []string {
	v := []string{string(c.Mode)}
	for _, d := range coll.Dims {
		v = append(v, d.Text(c))
	}
	if size {
		v = append(v, strconv.FormatInt(c.SizeBytes, 10))
	}
	return v
}

// EncodeMetrics writes s's metrics (and the bus-bandwidth gates') in the
// text exposition format, through prometheus/common's encoder. Every
// figure is in base units: seconds, bytes per second, ratios.
func EncodeMetrics(b *bytes.Buffer, s Summary, gates []GateResult) error {
	m := &metrics{reg: prometheus.NewPedanticRegistry(), vecs: map[string]*prometheus.GaugeVec{}}
	m.set("rsag_run_info", "The rsag that ran and its backend (always 1).",
		[]string{"version", "commit", "backend"}, []string{s.RSAG.Version, s.RSAG.Commit, s.Backend}, 1)
	for _, st := range Statuses {
		m.set("rsag_run_status", "1 for the run's final status (as run.json says it), 0 for the others.",
			[]string{"status"}, []string{st}, boolValue(st == s.Status))
	}
	m.set("rsag_run_checks_passed", "1 when every contract, timing, memory, numerics and soak check held on every rank.",
		nil, nil, boolValue(s.ChecksPassed))
	verdictMetrics(m, VerdictsIn(s))
	if t, err := time.Parse(time.RFC3339, s.Started); err == nil {
		m.set("rsag_run_start_timestamp_seconds", "When the run started, in seconds since the Unix epoch.", nil, nil, float64(t.Unix()))
	}
	if t, err := time.Parse(time.RFC3339, s.Ended); err == nil {
		m.set("rsag_run_end_timestamp_seconds", "When the run ended, in seconds since the Unix epoch.", nil, nil, float64(t.Unix()))
	}
	m.set("rsag_run_ranks", "The ranks of the run.", nil, nil, float64(s.WorldSize))
	m.set("rsag_run_nodes", "The nodes (hosts) of the run.", nil, nil, float64(len(s.Nodes)))
	m.set("rsag_run_gpu_shared", "1 when ranks shared a GPU: timings then measure NCCL's network transport, not the GPU's links.",
		nil, nil, boolValue(s.GPUShared != ""))

	for _, c := range s.Contracts {
		m.set("rsag_contract_held", "1 when the contract held on every rank, 0 when it failed on any.",
			[]string{"contract"}, []string{c.Name}, boolValue(len(c.FailedRanks) == 0))
		m.set("rsag_contract_failed_ranks", "The ranks on which the contract failed.",
			[]string{"contract"}, []string{c.Name}, float64(len(c.FailedRanks)))
	}

	tl := caseLabels(true)
	for _, t := range s.Timing {
		v := caseValues(t.Case, true)
		m.set("rsag_collective_median_seconds", "The median time of one operation of the mode's collectives, over the kept cycles.", tl, v, t.MedianUS/1e6)
		m.set("rsag_collective_p99_seconds", "The 99th percentile of the time of one operation, over the kept cycles.", tl, v, t.P99US/1e6)
		m.set("rsag_collective_busbw_bytes_per_second", "nccl-tests' bus bandwidth, from the median time.", tl, v, t.BusBWGBps*1e9)
		m.set("rsag_collective_algbw_bytes_per_second", "nccl-tests' algorithm bandwidth (size over the median time).", tl, v, t.AlgBWGBps*1e9)
		m.set("rsag_collective_correct", "1 when every checked output of the case held on every rank.", tl, v, boolValue(t.Correct))
	}
	fl := caseLabels(false)
	for _, f := range s.Fits {
		if !f.OK() {
			continue
		}
		v := caseValues(f.Case, false)
		m.set("rsag_fit_alpha_seconds", "The Hockney model's latency alpha in t(n) = alpha + n/B, fitted over the sizes.", fl, v, f.AlphaUS/1e6)
		m.set("rsag_fit_bandwidth_bytes_per_second", "The Hockney model's bandwidth B in t(n) = alpha + n/B.", fl, v, f.BandwidthGBps*1e9)
		m.set("rsag_fit_r2_ratio", "The fit's weighted coefficient of determination.", fl, v, f.R2)
	}
	for _, g := range gates {
		v := caseValues(g.Stat.Case, true)
		m.set("rsag_gate_min_busbw_bytes_per_second", "A run's min_busbw_gbps gate on direct AllReduce at its largest size.", tl, v, g.MinGBps*1e9)
		m.set("rsag_gate_passed", "1 when the case met its run's min_busbw_gbps gate.", tl, v, boolValue(g.Passed()))
	}

	if l := s.Locate; l != nil {
		locateMetrics(m, *l)
	}
	if sk := s.Soak; sk != nil {
		m.set("rsag_soak_iterations", "The soak's iterations.", nil, nil, float64(sk.Iterations))
		m.set("rsag_soak_failed_iterations", "The soak's iterations with a wrong output.", nil, nil, float64(sk.FailedIterations))
		m.set("rsag_soak_duration_seconds", "How long the soak ran.", nil, nil, sk.ElapsedS)
	}
	return m.encode(b)
}

func (m *metrics) encode(b *bytes.Buffer) error {
	if m.err != nil {
		return m.err
	}
	families, err := m.reg.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

// Gauges is a set of gauge families in Prometheus' text format, checked
// by the pedantic registry as rsag.prom is: for outputs beside a run's
// (rsag check's verdicts).
type Gauges struct{ m *metrics }

// NewGauges is an empty set.
func NewGauges() Gauges {
	return Gauges{&metrics{reg: prometheus.NewPedanticRegistry(), vecs: map[string]*prometheus.GaugeVec{}}}
}

// Set sets the gauge name{labels=values} (its family made with help the
// first time).
func (g Gauges) Set(name, help string, labels, values []string, v float64) {
	g.m.set(name, help, labels, values, v)
}

// SetCase sets a gauge labelled by a case as rsag.prom's are (its mode,
// every dimension and its size).
func (g Gauges) SetCase(name, help string, c coll.Case, v float64) {
	g.m.set(name, help, caseLabels(true), caseValues(c, true), v)
}

// Encode writes the families in the text format.
func (g Gauges) Encode(b *bytes.Buffer) error { return g.m.encode(b) }

// verdictMetrics are the run's list of verdicts: its outcome (one series
// per outcome, 1 for the run's), whether any check could not judge, and
// each phase's checks by outcome and each check's own, so that an alert
// on a failed or inconclusive check needs no regular expression. The
// series grow with the checks, as junit.xml's test cases do.
func verdictMetrics(m *metrics, v Verdicts) {
	inconclusive := false
	for _, o := range Outcomes {
		m.set("rsag_verdict", "1 for the run's outcome over every check but the suspects it names (held, failed, inconclusive, not run), "+
			"0 for the others.", []string{"outcome"}, []string{string(o)}, boolValue(o == v.Outcome))
	}
	for _, p := range v.Phases {
		n := p.Counts()
		for _, o := range Outcomes {
			m.set("rsag_phase_checks", "The phase's checks with each outcome (held, failed, inconclusive, not run).",
				[]string{"phase", "outcome"}, []string{p.Phase, string(o)}, float64(n[o]))
		}
		for _, c := range p.Checks {
			m.set("rsag_check_outcome", "1 for each check of the run's list of verdicts, labelled with its outcome.",
				[]string{"phase", "check", "outcome"}, []string{p.Phase, c.Name, string(c.Outcome)}, 1)
		}
		inconclusive = inconclusive || n[Inconclusive] > 0
	}
	m.set("rsag_inconclusive", "1 when some check could not judge (rsag_check_outcome{outcome=\"inconclusive\"} says which).",
		nil, nil, boolValue(inconclusive))
	m.set("rsag_findings", "The suspects the run names (locate's nodes, links and ranks), its findings about the cluster.",
		nil, nil, float64(len(v.Findings())))
}

// locateMetrics are the locate phase's: every node's figures per step and
// probe, every node pair's (link's), and the suspects. The series grow
// with the nodes and pairs the schedule measured, not with samples.
func locateMetrics(m *metrics, l SummaryLocate) {
	probe := func(i int) []string {
		if i < 0 || i >= len(l.Probes) {
			return []string{"", ""}
		}
		return []string{l.Probes[i].Collective, strconv.FormatInt(l.Probes[i].SizeBytes, 10)}
	}
	nl := []string{"node", "step", "collective", "size_bytes"}
	for _, n := range l.Nodes {
		m.set("rsag_locate_node_suspect", "1 when the locate phase names the node a suspect.", []string{"node"}, []string{n.Host}, boolValue(n.Suspect))
		for step, figs := range map[string][]SummaryLocateFigure{"inside": n.Inside, "pairs": n.Pairs} {
			for _, f := range figs {
				m.set("rsag_locate_node_figure_ratio", "A node's bus bandwidth over the median of its step's units (1: typical; below the threshold: slow).",
					nl, append([]string{n.Host, step}, probe(f.Probe)...), f.Figure)
			}
		}
	}
	ll := []string{"link", "collective", "size_bytes"}
	for _, p := range l.Pairs {
		link := strings.Join(p.Nodes, "-")
		m.set("rsag_locate_link_suspect", "1 when the locate phase names the node pair (link) a suspect.", []string{"link"}, []string{link}, boolValue(p.Suspect))
		for _, f := range p.Figures {
			m.set("rsag_locate_link_figure_ratio", "A node pair's bus bandwidth over the median of its round's pairs.",
				ll, append([]string{link}, probe(f.Probe)...), f.Figure)
		}
	}
	m.set("rsag_locate_threshold_ratio", "The locate phase's threshold: a figure below it in every repeat is slow.", nil, nil, l.Threshold)
	m.set("rsag_locate_duration_seconds", "How long the locate phase ran, on its slowest rank.", nil, nil, l.Seconds)
	m.set("rsag_locate_suspects", "The suspects the locate phase names (nodes, links, ranks).", nil, nil, float64(len(l.Suspects)))
	sl := []string{"kind", "nodes", "ranks", "problem"}
	for _, sp := range l.Suspects {
		v := []string{sp.Kind, strings.Join(sp.Nodes, "-"), listText(sp.Ranks), sp.Problem}
		m.set("rsag_locate_suspect_figure_ratio", "A suspect's lowest figure against the median (latency or bandwidth, as problem says).", sl, v, sp.Figure)
	}
}

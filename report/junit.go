package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"time"
)

// JUnitFile is the run's verdicts as JUnit XML, for the CI system or
// pipeline that started the run (GitLab, Jenkins, GitHub Actions): one
// test suite per phase, one test case per contract, check, gate and
// suspect, each failure with its message.
const JUnitFile = "junit.xml"

// junit.xml registers itself: a last output, since it states the run's
// status (its "run" suite), which must be run.json's final one.
func init() {
	Register(Output{Stage: Last, Patterns: []string{JUnitFile}, Plan: func(in Input) ([]string, func(string) error) {
		return []string{JUnitFile}, func(dir string) error {
			return writeFile(filepath.Join(dir, JUnitFile), func(b *bytes.Buffer) error {
				return EncodeJUnit(b, JUnit(*in.Summary, in.Ran, in.Gates))
			})
		}
	}})
}

// JUnitSuites is junit.xml's root.
type JUnitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []JUnitSuite `xml:"testsuite"`
}

// JUnitSuite is one phase.
type JUnitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr,omitempty"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Hostname  string      `xml:"hostname,attr,omitempty"`
	Cases     []JUnitCase `xml:"testcase"`
}

// JUnitCase is one contract, check, gate or suspect.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	Skipped   *JUnitFailure `xml:"skipped,omitempty"`
}

// JUnitFailure is a failed (or skipped) case's message and its type.
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// suite collects one phase's cases.
type suite struct{ JUnitSuite }

func (s *suite) add(name string, failed bool, kind, message string) {
	s.Add(name, failed, kind, message)
}

// Add adds a test case, failed with message (of type kind) or passed.
func (s *JUnitSuite) Add(name string, failed bool, kind, message string) {
	c := JUnitCase{Name: name, ClassName: "rsag." + s.Name}
	if failed {
		c.Failure = &JUnitFailure{Message: message, Type: kind, Text: message}
		s.Failures++
	}
	s.Cases = append(s.Cases, c)
	s.Tests++
}

func (s *suite) skip(name, why string) {
	s.Cases = append(s.Cases, JUnitCase{Name: name, ClassName: "rsag." + s.Name, Skipped: &JUnitFailure{Message: why}})
	s.Tests++
	s.Skipped++
}

// JUnit is the run's test suites: "run" (its status), then each phase
// that ran, in the order they run.
func JUnit(s Summary, ran Phases, gates []GateResult) JUnitSuites {
	var suites []*suite
	newSuite := func(name string) *suite {
		st := &suite{JUnitSuite{Name: name, Timestamp: s.Started}}
		if len(s.Nodes) > 0 {
			st.Hostname = s.Nodes[0].Host
		}
		suites = append(suites, st)
		return st
	}
	run := newSuite("run")
	if t0, err := time.Parse(time.RFC3339, s.Started); err == nil {
		if t1, err := time.Parse(time.RFC3339, s.Ended); err == nil {
			run.Time = fmt.Sprintf("%.0f", t1.Sub(t0).Seconds())
		}
	}
	run.add("status", s.Status != Statuses[0], "run", fmt.Sprintf("the run %s: %s", s.Status, s.Reason))
	if ran.Has(Contracts) {
		c := newSuite("contracts")
		for _, k := range s.Contracts {
			c.add(k.Name, len(k.FailedRanks) > 0, "contract", fmt.Sprintf("%s failed on rank(s) %s: %s", k.Name, listText(k.FailedRanks), k.Detail))
		}
	}
	if ran.Has(Timing) {
		t := newSuite("timing")
		for _, st := range s.Timing {
			name := GateResult{Stat: st}.Name() + " " + string(st.Mode)
			t.add(name+": output correct", !st.Correct, "check", name+": a timed output was wrong on some rank")
		}
		for _, g := range gates {
			t.add("gate "+g.Name()+fmt.Sprintf(": busbw%s >= %.2f GB/s", g.statisticText(), g.MinGBps), !g.Passed(), "gate", g.Failure())
		}
	}
	if ran.Has(Memory) {
		m := newSuite("memory")
		for _, mm := range s.Memory {
			m.add(mm.Mode+": output correct", !mm.Correct, "check", mm.Mode+": a memory run's output was wrong on some rank")
		}
	}
	if ran.Has(Numerics) {
		n := newSuite("numerics")
		for _, nn := range s.Numerics {
			name := fmt.Sprintf("%s %s: within the error bound", nn.DType, SizeText(nn.SizeBytes))
			n.add(name, !nn.WithinBound, "check", fmt.Sprintf("%s %s: error %.3gx the bound", nn.DType, SizeText(nn.SizeBytes), nn.MaxBoundRatio))
		}
	}
	if l := s.Locate; ran.Has(Locate) && l != nil {
		junitLocate(newSuite("locate"), *l)
	}
	if sk := s.Soak; ran.Has(Soak) && sk != nil {
		k := newSuite("soak")
		k.Time = fmt.Sprintf("%.3f", sk.ElapsedS)
		k.add(fmt.Sprintf("%d iterations: every output correct", sk.Iterations), sk.FailedIterations > 0, "soak",
			fmt.Sprintf("%d of %d iterations failed: %s", sk.FailedIterations, sk.Iterations, sk.Verdict))
	}
	var all []JUnitSuite
	for _, st := range suites {
		all = append(all, st.JUnitSuite)
	}
	return NewJUnit("rsag", all...)
}

// NewJUnit is a junit.xml root over suites, with their totals.
func NewJUnit(name string, suites ...JUnitSuite) JUnitSuites {
	out := JUnitSuites{Name: name, Suites: suites}
	for _, st := range suites {
		out.Tests += st.Tests
		out.Failures += st.Failures
	}
	return out
}

// junitLocate is one case per node (failed when it is a suspect, with its
// figure: "node3: bandwidth 0.31x median") and one per suspect that is
// not a node (a link, a rank, a rank pair).
func junitLocate(st *suite, l SummaryLocate) {
	node := map[string]SummaryLocateSuspect{}
	for _, sp := range l.Suspects {
		if sp.Kind == "node" && len(sp.Nodes) == 1 {
			node[sp.Nodes[0]] = sp
		}
	}
	for _, n := range l.Nodes {
		msg := n.Host + ": " + n.Verdict
		sp, named := node[n.Host]
		if named {
			msg = n.Host + ": " + sp.FigureText()
		}
		st.add(n.Host, named || n.Suspect, "suspect", msg)
	}
	for _, sp := range l.Suspects {
		if sp.Kind == "node" && len(sp.Nodes) == 1 {
			continue
		}
		st.add(sp.Text, true, "suspect", sp.Text)
	}
	for _, step := range l.Steps {
		if !step.Ran {
			st.skip(step.Title, step.Note)
		}
	}
}

// FigureText is what a suspect's figure says: "bandwidth 0.31x median".
func (s SummaryLocateSuspect) FigureText() string {
	return fmt.Sprintf("%s %s median", s.Problem, FigureText(s.Figure))
}

// EncodeJUnit writes j as indented XML with its declaration.
func EncodeJUnit(b *bytes.Buffer, j JUnitSuites) error {
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(b)
	enc.Indent("", "  ")
	if err := enc.Encode(j); err != nil {
		return err
	}
	b.WriteString("\n")
	return nil
}

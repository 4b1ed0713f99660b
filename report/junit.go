package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// JUnitFile is the run's verdicts as JUnit XML, for the CI system or
// pipeline that started the run (GitLab, Jenkins, GitHub Actions): one
// test suite per phase, one test case per check of the run's list of
// verdicts (verdicts.go), each failure with its message, each
// inconclusive or not-run check skipped with its reason.
const JUnitFile = "junit.xml"

// junit.xml registers itself: a last output, since it states the run's
// status (its "run" suite), which must be run.json's final one.
func init() {
	Register(Output{Stage: Last, Patterns: []string{JUnitFile}, Ended: true, Plan: func(in Input) ([]string, func(string) error) {
		return []string{JUnitFile}, func(dir string) error {
			return writeFile(filepath.Join(dir, JUnitFile), func(b *bytes.Buffer) error {
				return EncodeJUnit(b, JUnit(*in.Summary))
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
	Name      string `xml:"name,attr"`
	Tests     int    `xml:"tests,attr"`
	Failures  int    `xml:"failures,attr"`
	Errors    int    `xml:"errors,attr"`
	Skipped   int    `xml:"skipped,attr"`
	Time      string `xml:"time,attr,omitempty"`
	Timestamp string `xml:"timestamp,attr,omitempty"`
	Hostname  string `xml:"hostname,attr,omitempty"`
	// Properties say what a reader of the cases must know: that the
	// ranks shared a GPU, for one.
	Properties *JUnitProperties `xml:"properties,omitempty"`
	Cases      []JUnitCase      `xml:"testcase"`
}

// JUnitProperties are a suite's properties.
type JUnitProperties struct {
	Property []JUnitProperty `xml:"property"`
}

// JUnitProperty is one of a suite's properties.
type JUnitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
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

// skip adds a skipped test case: one that could not judge
// (inconclusive) or did not run, with why.
func (s *JUnitSuite) skip(name string, o Outcome, why string) {
	if !strings.HasPrefix(why, string(o)) {
		why = string(o) + ": " + why
	}
	s.Cases = append(s.Cases, JUnitCase{Name: name, ClassName: "rsag." + s.Name, Skipped: &JUnitFailure{Message: why, Type: string(o)}})
	s.Tests++
	s.Skipped++
}

// JUnit is the run's list of verdicts as test suites: "run" (its
// status), then each phase in the order it ran, a test case per check:
// failed with its message, skipped with "inconclusive: why" or "not run:
// why", or passed.
func JUnit(s Summary) JUnitSuites {
	var all []JUnitSuite
	for _, p := range VerdictsIn(s).Phases {
		st := JUnitSuite{Name: p.Phase, Timestamp: s.Started}
		if len(s.Nodes) > 0 {
			st.Hostname = s.Nodes[0].Host
		}
		st.Time = phaseTime(s, p.Phase)
		if s.GPUShared != "" {
			st.Properties = &JUnitProperties{[]JUnitProperty{{Name: "gpu_shared", Value: s.GPUShared}}}
		}
		for _, c := range p.Checks {
			switch c.Outcome {
			case Failed, Held:
				st.Add(c.Name, c.Outcome == Failed, c.Kind, c.Message)
			default:
				st.skip(c.Name, c.Outcome, c.Message)
			}
		}
		all = append(all, st)
	}
	return NewJUnit("rsag", all...)
}

// phaseTime is how long the phase took, in seconds, for its suite's time
// attribute; the run's from its start and end. "" when unknown.
func phaseTime(s Summary, phase string) string {
	if phase == RunPhase {
		t0, err0 := time.Parse(time.RFC3339, s.Started)
		t1, err1 := time.Parse(time.RFC3339, s.Ended)
		if err0 != nil || err1 != nil {
			return ""
		}
		return fmt.Sprintf("%.0f", t1.Sub(t0).Seconds())
	}
	for _, p := range s.Phases {
		if p.Name == phase {
			return fmt.Sprintf("%.3f", p.Seconds)
		}
	}
	return ""
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

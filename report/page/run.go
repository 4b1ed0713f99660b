// One run's page: its view, in section order, from the summary. Each
// subject's section is a file of its own: verdict.go, contracts.go,
// timing.go, model.go, memory.go, suspects.go, environment.go.

package page

import (
	"fmt"
	"strings"

	"rsag/coll"
	"rsag/report"
)

// Section ids, in the page's order: the browser test and the golden file
// look for each.
var SectionIDs = []string{"contracts", "timing", "model", "breakdown", "memory", "numerics", "nodes", "fastest", "environment"}

// runView builds a run's page.
func runView(s report.Summary) (view, error) {
	s = Complete(s)
	figs, err := figuresOf(s)
	if err != nil {
		return view{}, err
	}
	v := view{Verdict: verdictOf(s)}
	word := v.Verdict.word()
	v.Title = fmt.Sprintf("rsag: %s, %s on %s, %s", word, s.Backend, plural(s.WorldSize, "rank", "ranks"), strings.TrimPrefix(whenText(s.Started, ""), "started "))
	v.Sections = []section{
		contractsSection(s),
		timingSection(s, figs),
		modelSection(s, figs),
		breakdownSection(s),
		memorySection(s, figs),
		numericsSection(s),
	}
	// The soak's and locate's sections are there when those phases ran,
	// as their banner lines are.
	if s.Soak != nil {
		v.Sections = append(v.Sections, soakSection(*s.Soak))
	}
	if s.Locate != nil {
		v.Sections = append(v.Sections, locateSection(*s.Locate, figs))
	}
	v.Sections = append(v.Sections, phaseSections(s)...)
	v.Sections = append(v.Sections,
		nodesSection(s),
		fastestSection(s),
		environmentSection(s))
	v.Footer = fmt.Sprintf("Written from summary.json (schema_version %d) of a run of rsag %s (commit %s). "+
		"rsag report DIR writes this page again from it; the figures are in the run's directory as SVG and PNG too.",
		s.SchemaVersion, s.RSAG.Version, s.RSAG.Commit)
	return v, nil
}

// Complete fills in what a summary.json written by an older rsag of the
// same schema lacks, as the current rsag would have written it: the
// ratios, the model (fits, crossovers, breakdowns) and the node table are
// derived from the timing statistics and the ranks. A summary that has
// them is returned as it is.
func Complete(s report.Summary) report.Summary {
	if s.Ratios == nil && len(s.Timing) > 0 {
		s.Ratios = report.Ratios(s.Timing)
	}
	if s.Fits == nil && s.Crossover == nil && s.Breakdown == nil && len(s.Timing) > 0 {
		s.Fits, s.Crossover, s.Breakdown = report.FitsOf(s.Timing)
	}
	if s.Nodes == nil && len(s.Ranks) > 0 {
		infos := make([]coll.Info, len(s.Ranks))
		for i, r := range s.Ranks {
			infos[i] = coll.Info{Host: r.Host, LocalRank: r.LocalRank, Device: r.Device}
		}
		s.Nodes = report.Nodes(infos)
	}
	return s
}

// configured is a value of the run's resolved config (summary.json's
// "config"), by its keys: configured(s, "timing", "enabled").
func configured(s report.Summary, keys ...string) (any, bool) {
	v := s.Config
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

// absent says why a phase has no results: its config turned it off, or
// the run stopped before it.
func absent(s report.Summary, phase string) string {
	if on, ok := configured(s, phase, "enabled"); ok && on == false {
		return fmt.Sprintf("Not run: [%s] enabled = false in this run's config.", phase)
	}
	return "No results: the run stopped before this phase (see the verdict above)."
}

func orEmpty(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}

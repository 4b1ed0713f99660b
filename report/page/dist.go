package page

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"rsag/report"
)

// The distribution strip beside each median in the timing table: a case's
// kept samples as summary.json gives them (min, p10, median, p90, p99,
// max), drawn on one log scale for every row, relative to the row's own
// median, so that the tails of a 2 µs and a 2 ms case compare: the
// whisker runs from the minimum to the maximum, the box from p10 to p90,
// the bar is the median and the dot the p99. The scale runs from half the
// median to distHi times it; a tail beyond ends in an arrow.
const (
	distW, distH = 132.0, 16.0
	distLo       = 0.5
	distHi       = 16.0
)

// distX is where t, relative to median, falls on the strip.
func distX(t, median float64) float64 {
	r := t / median
	if !(r > 0) {
		r = distLo
	}
	r = math.Min(math.Max(r, distLo), distHi)
	return 2 + (distW-4)*math.Log(r/distLo)/math.Log(distHi/distLo)
}

// distStrip is the inline SVG of st's distribution. Its label names the
// one figure the row's cells do not, the minimum: a sweep's table has
// hundreds of rows, and every byte of a strip is paid for each of them.
func distStrip(st report.TimingStat) template.HTML {
	if !(st.MedianUS > 0) {
		return ""
	}
	x := func(t float64) string { return fmt.Sprintf("%.0f", distX(t, st.MedianUS)) }
	var b strings.Builder
	// The median and 2x the median fall at the same place in every row:
	// the page's style draws them (distCSS), not each row.
	fmt.Fprintf(&b, `<svg class="dist" role="img" aria-label="distribution, min %s µs" viewBox="0 0 %g %g">`,
		report.USText(st.MinUS), distW, distH)
	fmt.Fprintf(&b, `<path d="M%s 8H%s"/>`, x(st.MinUS), x(st.MaxUS))
	fmt.Fprintf(&b, `<rect x="%s" y="3" width="%.0f" height="10"/>`, x(st.P10US), math.Max(distX(st.P90US, st.MedianUS)-distX(st.P10US, st.MedianUS), 1))
	fmt.Fprintf(&b, `<circle cx="%s" cy="8" r="2.5"/>`, x(st.P99US))
	if st.MaxUS/st.MedianUS > distHi {
		fmt.Fprintf(&b, `<path class="a" d="M%g 8l-5-4v8z"/>`, distW)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// distCSS draws what every strip shares: the median's bar and the faint
// line at 2x it, over the strip's box.
func distCSS() string {
	pc := func(x float64) float64 { return 100 * x / distW }
	m, two := distX(1, 1), distX(2, 1)
	return fmt.Sprintf("td svg.dist{background:linear-gradient(90deg,transparent %.1f%%,#1a1a1a %.1f%%,#1a1a1a %.1f%%,transparent %.1f%%,"+
		"transparent %.1f%%,#ddd %.1f%%,#ddd %.1f%%,transparent %.1f%%)}\n",
		pc(m-1), pc(m-1), pc(m+1), pc(m+1), pc(two), pc(two), pc(two+1), pc(two+1))
}

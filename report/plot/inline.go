package plot

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Inline is a figure drawn for an HTML page: the SVG element alone, sized
// by the page, with a title and a description for a reader who cannot see
// it.
type Inline struct {
	Name  string // the file name without extension: time_vs_size_matrix
	Kind  string // which figure: TimeVsSize, BusBWVsSize, ...
	Run   string // the run it shows; "" for the memory figure
	Title string
	Alt   string
	SVG   []byte // <svg ...>...</svg>, no XML prolog, no fixed size
}

// Inline draws every figure as an SVG element for a page, in Write's
// order.
func (fs Figures) Inline() ([]Inline, error) {
	out := make([]Inline, 0, len(fs))
	for _, f := range fs {
		data, err := f.render("svg")
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.name, err)
		}
		svg, err := inlineSVG(data, f.alt())
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", f.name, err)
		}
		out = append(out, Inline{Name: f.name, Kind: f.kind, Run: f.run, Title: f.title, Alt: f.alt(), SVG: svg})
	}
	return out, nil
}

var svgOpen = regexp.MustCompile(`<svg width="[^"]*" height="[^"]*"`)

// inlineSVG cuts the XML prolog and comment off gonum's SVG document and
// turns its root into an image for a page: no fixed size (the viewBox
// keeps the shape), role img and an aria-label with the description.
func inlineSVG(doc []byte, alt string) ([]byte, error) {
	i := bytes.Index(doc, []byte("<svg "))
	if i < 0 {
		return nil, fmt.Errorf("no <svg> element in the rendered figure")
	}
	doc = doc[i:]
	loc := svgOpen.FindIndex(doc)
	if loc == nil || loc[0] != 0 {
		return nil, fmt.Errorf("the rendered figure's <svg> element has no width and height to replace")
	}
	rest := doc[loc[1]:]
	// An HTML parser puts <svg> in the SVG namespace itself; the
	// declarations would only be URLs in a page that links to none.
	rest = bytes.Replace(rest, []byte("\n\txmlns=\"http://www.w3.org/2000/svg\""), nil, 1)
	if !bytes.Contains(rest, []byte("xlink:href")) {
		rest = bytes.Replace(rest, []byte("\n\txmlns:xlink=\"http://www.w3.org/1999/xlink\""), nil, 1)
	}
	var b bytes.Buffer
	b.WriteString(`<svg role="img" aria-label="`)
	b.WriteString(attrEscaper.Replace(alt))
	b.WriteString(`"`)
	b.Write(rest)
	return bytes.TrimSpace(b.Bytes()), nil
}

var attrEscaper = strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;")

// alt describes the figure in words: its title, what it plots against
// what, its panels and the legend's entries.
func (f figure) alt() string {
	var b strings.Builder
	b.WriteString(f.title)
	fmt.Fprintf(&b, ". %s against %s", f.yLabel, f.xLabel)
	if len(f.panels) > 1 {
		var titles []string
		for _, p := range f.panels {
			titles = append(titles, p.Title.Text)
		}
		fmt.Fprintf(&b, ", in %d panels (%s)", len(f.panels), strings.Join(titles, "; "))
	}
	for _, s := range f.legend {
		var names []string
		for _, e := range s.entries {
			names = append(names, e.name)
		}
		if s.heading != "" {
			fmt.Fprintf(&b, ". %s: %s", s.heading, strings.Join(names, ", "))
		} else {
			fmt.Fprintf(&b, ". %s", strings.Join(names, ", "))
		}
	}
	b.WriteString(". The values are in the table.")
	return b.String()
}

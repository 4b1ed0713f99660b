package coll_test

import (
	"fmt"
	"regexp"
	"testing"

	"rsag/coll"
)

// Every registered timed mode carries how it is drawn, and no two share a
// colour (colour-vision deficiencies) or dashes (grey-scale print), so
// that a new mode is its record alone: the figures and the page read
// these and have no list of their own.
func TestEveryModeHasItsOwnColourAndDash(t *testing.T) {
	hex := regexp.MustCompile(`^#[0-9a-f]{6}$`)
	colours, dashes := map[string]coll.Mode{}, map[string]coll.Mode{}
	for _, name := range coll.Modes {
		m, ok := coll.ModeOf(name)
		if !ok {
			t.Fatalf("%s is in Modes without a record", name)
		}
		if !hex.MatchString(m.Colour) {
			t.Errorf("%s: colour %q, want an RGB colour as CSS writes it, \"#0072b2\"", name, m.Colour)
		}
		if len(m.Dash)%2 != 0 {
			t.Errorf("%s: dashes %v, want on and off lengths in pairs (or none: solid)", name, m.Dash)
		}
		for _, d := range m.Dash {
			if d <= 0 {
				t.Errorf("%s: dashes %v, want positive lengths", name, m.Dash)
			}
		}
		if other, ok := colours[m.Colour]; ok {
			t.Errorf("%s and %s share colour %s", name, other, m.Colour)
		}
		colours[m.Colour] = name
		key := fmt.Sprint(m.Dash)
		if other, ok := dashes[key]; ok {
			t.Errorf("%s and %s share dashes %s", name, other, key)
		}
		dashes[key] = name
	}
	if len(colours) == 0 {
		t.Fatal("no timed modes registered")
	}
}

package page

import (
	"strings"
	"testing"

	"rsag/coll"
	"rsag/model"
)

// The noisy 1M: the parts timed alone took 190% and 16% of the
// whole. The page prints the model's decision, "not split" and why, not
// the shares and a -106% rest read as "they overlap"; a possible split
// keeps its shares.
func TestBreakdownPrintsTheModelsSplit(t *testing.T) {
	s := load(t, "model-mpi-summary.json")
	if len(s.Breakdown) == 0 || len(s.Breakdown[0].Shares) < 2 {
		t.Fatal("the fixture has no breakdown")
	}
	whole := model.PartTime{Mode: coll.Decomposed, MedianUS: 1000, P10US: 900, P90US: 1200}
	noisy := model.SplitOf(whole, []model.PartTime{{Mode: coll.ReduceScatterAlone, MedianUS: 1900, P10US: 1700, P90US: 2100},
		{Mode: coll.AllGatherAlone, MedianUS: 160, P10US: 150, P90US: 170}})
	fine := model.SplitOf(whole, []model.PartTime{{Mode: coll.ReduceScatterAlone, MedianUS: 600, P10US: 550, P90US: 650},
		{Mode: coll.AllGatherAlone, MedianUS: 300, P10US: 280, P90US: 320}})
	noisy.SizeBytes, fine.SizeBytes = 1<<20, 4<<20
	s.Breakdown[0].Shares = []model.Share{noisy, fine}
	page := pageOf(t, s)
	sec := page[strings.Index(page, `<section id="breakdown">`):]
	sec = sec[:strings.Index(sec, "</section>")]
	for _, want := range []string{"RS 1900 &#43; AG 160.0</td>", ">not split: the parts timed alone add up to more than the whole",
		"RS 600.0 (60%) &#43; AG 300.0 (30%)", "100.0 (10%)"} {
		if !strings.Contains(sec, want) {
			t.Errorf("the breakdown lacks %q:\n%s", want, sec)
		}
	}
	for _, bad := range []string{"190%", "-106%", "overlap"} {
		if strings.Contains(sec, bad) {
			t.Errorf("the breakdown says %q:\n%s", bad, sec)
		}
	}
}

package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"rsag/coll"
)

// cyclic is 5 ranks placed round-robin over two hosts, one of them with a
// GPU on one rank and host memory on the other.
var cyclic = []coll.Info{
	{Host: "node1", Device: "host memory", LocalRank: 0},
	{Host: "node2", Device: "host memory", LocalRank: 0},
	{Host: "node1", Device: "host memory", LocalRank: 1},
	{Host: "node2", Device: "NVIDIA H200", LocalRank: 1},
	{Host: "node1", Device: "host memory", LocalRank: 2},
}

func TestNodesGroupsRanksByHost(t *testing.T) {
	want := []SummaryNode{
		{Host: "node1", Ranks: []int{0, 2, 4}, LocalRanks: []int{0, 1, 2}, Device: "host memory"},
		{Host: "node2", Ranks: []int{1, 3}, LocalRanks: []int{0, 1}, Device: "host memory, NVIDIA H200"},
	}
	if got := Nodes(cyclic); !reflect.DeepEqual(got, want) {
		t.Errorf("Nodes =\n %+v\nwant\n %+v", got, want)
	}
	if got := Nodes(nil); got != nil {
		t.Errorf("Nodes(nil) = %+v", got)
	}
}

func TestSummaryHasLocalRanksAndNodes(t *testing.T) {
	s := NewSummary(SummaryInput{Status: "complete", World: 5, Infos: cyclic})
	if s.Ranks[4].LocalRank != 2 || s.Ranks[3].Host != "node2" || s.Ranks[3].LocalRank != 1 {
		t.Errorf("ranks: %+v", s.Ranks)
	}
	if len(s.Nodes) != 2 || s.Nodes[1].Host != "node2" {
		t.Errorf("nodes: %+v", s.Nodes)
	}
	var b bytes.Buffer
	if err := EncodeSummary(&b, s); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, compileSchema(t), b.Bytes()); err != nil {
		t.Error(err)
	}
	for _, want := range []string{`"local_rank": 2`, `"local_ranks": [`, `"nodes": [`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary.json lacks %s:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := EncodeSummary(&b, NewSummary(SummaryInput{Status: "failed", World: 2})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"nodes": []`) {
		t.Errorf("no ranks: nodes must be [], not null or absent:\n%s", b.String())
	}
}

// local_rank and nodes are optional additions: a summary.json written
// before them still validates, and a wrong type does not.
func TestSchemaTakesSummariesWithoutNodes(t *testing.T) {
	sch := compileSchema(t)
	var b bytes.Buffer
	if err := EncodeSummary(&b, NewSummary(SummaryInput{Status: "complete", World: 5, Infos: cyclic})); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(b.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		data, _ := json.Marshal(m)
		return data
	}
	older := edit(func(m map[string]any) {
		delete(m, "nodes")
		for _, r := range m["ranks"].([]any) {
			delete(r.(map[string]any), "local_rank")
		}
	})
	if err := validate(t, sch, older); err != nil {
		t.Errorf("a summary without nodes and local_rank: %v", err)
	}
	for name, f := range map[string]func(map[string]any){
		"nodes not a list":   func(m map[string]any) { m["nodes"] = "node1" },
		"node without host":  func(m map[string]any) { delete(m["nodes"].([]any)[0].(map[string]any), "host") },
		"negative local":     func(m map[string]any) { m["ranks"].([]any)[0].(map[string]any)["local_rank"] = -1 },
		"node unknown field": func(m map[string]any) { m["nodes"].([]any)[0].(map[string]any)["gpus"] = 4 },
	} {
		if validate(t, sch, edit(f)) == nil {
			t.Errorf("%s: the schema accepted it", name)
		}
	}
}

func TestRanksAndNodesTables(t *testing.T) {
	var out strings.Builder
	if err := RanksTable(&out, cyclic); err != nil {
		t.Fatal(err)
	}
	if err := NodesTable(&out, Nodes(cyclic)); err != nil {
		t.Fatal(err)
	}
	// Cells, whatever their padding.
	squeezed := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"| rank | host | local rank | device | bus id |", "| 4 | node1 | 2 | host memory | - |",
		"| host | ranks | local ranks | device |", "| node1 | 0,2,4 | 0-2 | host memory |",
		"| node2 | 1,3 | 0,1 | host memory, NVIDIA H200 |"} {
		if !strings.Contains(squeezed, want) {
			t.Errorf("tables lack %q:\n%s", want, out.String())
		}
	}
}

// Hierarchy groups show in the node table; a single group holding every
// rank (one node, hierarchy.group_size 0) is called out, real groups are not.
func TestNodesTableHierarchyGroups(t *testing.T) {
	for _, c := range []struct {
		groups []int
		note   bool
	}{{[]int{0, 0, 0, 0}, true}, {[]int{0, 1, 0, 1}, false}} {
		var out strings.Builder
		if err := NodesTable(&out, WithGroups(Nodes(cyclic[:4]), c.groups)); err != nil {
			t.Fatal(err)
		}
		squeezed := strings.Join(strings.Fields(out.String()), " ")
		if want := "| host | ranks | local ranks | device | hierarchy groups |"; !strings.Contains(squeezed, want) {
			t.Errorf("groups %v: no %q:\n%s", c.groups, want, out.String())
		}
		if got := strings.Contains(out.String(), "note: one hierarchy group holds all 4 ranks") &&
			strings.Contains(out.String(), "set hierarchy.group_size to 2, or run on several nodes"); got != c.note {
			t.Errorf("groups %v: the one-group note is there: %v, want %v:\n%s", c.groups, got, c.note, out.String())
		}
	}
}

func TestListText(t *testing.T) {
	for want, v := range map[string][]int{"": nil, "0": {0}, "0,1": {0, 1}, "0-3": {0, 1, 2, 3},
		"0-2,5,7-9": {0, 1, 2, 5, 7, 8, 9}, "1,3,5": {1, 3, 5}} {
		if got := listText(v); got != want {
			t.Errorf("listText(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestTimingsTableSaysWhenARunSpansNodes(t *testing.T) {
	stats := []TimingStat{{Case: coll.Case{Run: "default", SizeBytes: 1024, Mode: "direct"}, MedianUS: 1},
		{Case: coll.Case{Run: "default", SizeBytes: 1024, Mode: "decomposed"}, MedianUS: 2}}
	var out strings.Builder
	if err := TimingsTable(&out, stats, 4, 2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "across 2 nodes: the bandwidth is bounded by the network between them") {
		t.Errorf("no note that the run spans nodes:\n%s", out.String())
	}
}

// Ranks that outnumber the processors they may run on between them (4
// ranks bound to 2 processors) are said crowded, on that node only, and the
// timing tables say what that does to the timings; a node of one
// processor a rank, or unknown affinity, is not.
func TestCrowdedNodesAreSaid(t *testing.T) {
	infos := []coll.Info{
		{Host: "laptop", CPUs: []int{0, 1}}, {Host: "laptop", CPUs: []int{0, 1}},
		{Host: "laptop", CPUs: []int{0}}, {Host: "laptop", CPUs: []int{1}},
		{Host: "roomy", CPUs: []int{2}}, {Host: "roomy", CPUs: []int{3}},
		{Host: "unknown"}, {Host: "unknown"},
	}
	nodes := Nodes(infos)
	got := map[string]string{}
	for _, n := range nodes {
		got[n.Host] = n.Crowded
	}
	if want := map[string]string{"laptop": "4 ranks on 2 processors", "roomy": "", "unknown": ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("crowded %v, want %v", got, want)
	}
	s := Summary{Nodes: nodes, WorldSize: 8, Timing: []TimingStat{{Case: coll.Case{Run: "default", SizeBytes: 1024, Mode: "direct"}, MedianUS: 1}}}
	var out strings.Builder
	if err := timingTables(&out, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "note: ranks share processors (laptop: 4 ranks on 2 processors): the timings measure their turn-taking too") {
		t.Errorf("the timing tables do not say the ranks share processors:\n%s", out.String())
	}
	if note := CrowdedNote(Nodes(infos[4:])); note != "" {
		t.Errorf("a node of a processor a rank: %q", note)
	}
}

// A rank that sat runnable but not running for WaitedShare of the timing
// phase or more marks its node, with the rank and the figure; a rank below
// it, or without a figure (a kernel without schedstats), does not. The
// summary, the timing tables and the judge's few words all say it, beside
// the count of ranks on processors when both hold.
func TestRanksThatWaitedForAProcessorAreSaid(t *testing.T) {
	infos := []coll.Info{
		{Host: "quiet"}, {Host: "quiet"},
		{Host: "hog", CPUs: []int{0}}, {Host: "hog", CPUs: []int{1}},
		{Host: "both", CPUs: []int{0}}, {Host: "both", CPUs: []int{0}}, {Host: "both", CPUs: []int{0}},
		{Host: "unknown"},
	}
	// The figures seen on a 2-core machine (docs/history.md): quiet
	// smoke runs' worst rank 11 to 29%, beside one CPU hog 47 to 53%.
	rows := []TimingRankRow{
		{Rank: 0, Seconds: 0.04, WaitedS: 0.29 * 0.04}, {Rank: 1, Seconds: 0.04, WaitedS: 0},
		{Rank: 2, Seconds: 0.1, WaitedS: 0.09 * 0.1}, {Rank: 3, Seconds: 0.1, WaitedS: 0.526 * 0.1},
		{Rank: 4, Seconds: 2, WaitedS: 0.7}, {Rank: 5, Seconds: 2, WaitedS: 1.3}, {Rank: 6, Seconds: 2, WaitedS: 1.2},
	}
	s := NewSummary(SummaryInput{Infos: infos, World: len(infos), Rows: Rows{TimingRanks: rows}})
	got := map[string][2]string{}
	for _, n := range s.Nodes {
		got[n.Host] = [2]string{n.Crowded, n.Waited}
	}
	want := map[string][2]string{
		"quiet":   {"", ""},
		"hog":     {"", "rank 3 waited 53% of the timing phase for a processor"},
		"both":    {"3 ranks on 1 processor", "ranks 4-6 waited up to 65% of the timing phase for a processor"},
		"unknown": {"", ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("crowded and waited %q, want %q", got, want)
	}
	s.Timing = []TimingStat{{Case: coll.Case{Run: "default", SizeBytes: 1024, Mode: "direct"}, MedianUS: 1}}
	var out strings.Builder
	if err := timingTables(&out, s); err != nil {
		t.Fatal(err)
	}
	note := "note: ranks share processors (both: 3 ranks on 1 processor): the timings measure their turn-taking too; " +
		"ranks waited for processors (hog: rank 3 waited 53% of the timing phase for a processor; " +
		"both: ranks 4-6 waited up to 65% of the timing phase for a processor): the timings measure that waiting too"
	if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), note) {
		t.Errorf("the timing tables do not say %q:\n%s", note, out.String())
	}
	if why := CrowdedWhy(s.Nodes); !reflect.DeepEqual(why, []string{"ranks shared processors", "ranks waited for processors"}) {
		t.Errorf("why %q", why)
	}
	if why := CrowdedWhy(s.Nodes[1:2]); !reflect.DeepEqual(why, []string{"ranks waited for processors"}) {
		t.Errorf("why of the hog's node alone %q", why)
	}
	// At the threshold a node is said; just under it, not.
	for _, c := range []struct {
		share float64
		said  bool
	}{{WaitedShare, true}, {WaitedShare - 0.001, false}} {
		n := WithWaits([]SummaryNode{{Host: "h", Ranks: []int{0}}}, []TimingRankRow{{Rank: 0, Seconds: 1, WaitedS: c.share}})
		if (n[0].Waited != "") != c.said {
			t.Errorf("a rank that waited %.3f of the phase: %q", c.share, n[0].Waited)
		}
	}
}

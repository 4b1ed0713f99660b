package fold

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkFolded fails unless folded is line folded as Line promises: no
// line wider than width but a lone long word, every continuation
// indented two past the line's own indentation, and Unfold giving line
// back byte for byte.
func checkFolded(t *testing.T, line, folded string, width int) {
	t.Helper()
	lead := line[:len(line)-len(strings.TrimLeft(line, " "))]
	for i, l := range strings.Split(folded, "\n") {
		if n := utf8.RuneCountInString(l); n > width && strings.Contains(strings.TrimLeft(l, " "), " ") {
			t.Errorf("line %d: %d columns, above %d, and not one long word: %q", i, n, width, l)
		}
		if i > 0 && (!strings.HasPrefix(l, lead+"  ") || strings.HasPrefix(l, lead+"   ")) {
			t.Errorf("line %d is not indented by %d: %q", i, len(lead)+2, l)
		}
	}
	if got := Unfold(folded, width); got != line {
		t.Errorf("Unfold does not give the line back:\n got %q\nwant %q\nfolded:\n%s", got, line, folded)
	}
	if again := Line(Unfold(folded, width), width); again != folded {
		t.Errorf("folding the unfolded text again differs:\n%s\nwas\n%s", again, folded)
	}
}

// The early naming of a stuck rank (the line that first folded, issue
// 57): it breaks at its clauses where they fit, and a long word (a path)
// stays whole on a line of its own.
func TestLineFoldsAtClauses(t *testing.T) {
	line := "rsag: rank 0 (vm): stuck rank, named early: rank 2 on vm (pid 6830) is stopped (state T); its last heartbeat, " +
		"4.0 s ago, had it past timing reduce-scatter + all-gather #56006 (4096 bytes, decomposed, cycle 27985), which it left " +
		"0.0 s before; ranks 0,1,3 wait on it in timing reduce-scatter + all-gather #58821 (4096 bytes, decomposed, cycle 29392); " +
		"the watchdog ends the job in about 176 s (timeout_s 180); ending the job now (end_on_stuck_rank); /" +
		strings.Repeat("x", 150) + " and after it"
	got := Line(line, Width)
	checkFolded(t, line, got, Width)
	lines := strings.Split(got, "\n")
	if lines[0] != "rsag: rank 0 (vm): stuck rank, named early: rank 2 on vm (pid 6830) is stopped (state T);" {
		t.Errorf("first line %q, want the naming up to its first clause", lines[0])
	}
	if !strings.Contains(got, "\n  /"+strings.Repeat("x", 150)+"\n  and after it") {
		t.Errorf("the long word is not on a line of its own:\n%s", got)
	}
}

// A line within the width is left as it is, however it is indented or
// spaced; so is a table's row the writer is told to keep.
func TestShortLinesStay(t *testing.T) {
	for _, l := range []string{"", "rsag: a short line; two clauses", strings.Repeat("x", Width), "    indented  twice-spaced; ok ",
		strings.Repeat("é", Width)} {
		if got := Line(l, Width); got != l {
			t.Errorf("Line(%q) = %q", l, got)
		}
	}
}

// An indented line folds under itself, two further in; runs of spaces
// and a trailing space are kept; a line of one long word stays as it is.
func TestLineKeepsIndentationAndSpacing(t *testing.T) {
	line := "    note: " + strings.Repeat("word  spaced, ", 12) + "end "
	got := Line(line, 60)
	checkFolded(t, line, got, 60)
	if !strings.HasPrefix(strings.Split(got, "\n")[1], "      word") {
		t.Errorf("the continuation is not indented under the line:\n%s", got)
	}
	long := "rsag: " + strings.Repeat("y", 200)
	if got := Line(long, Width); got != "rsag:\n  "+strings.Repeat("y", 200) {
		t.Errorf("a long word: %q", got)
	}
	checkFolded(t, long, Line(long, Width), Width)
}

// Any line, at any width, folds within it and unfolds back exactly.
func TestLineAndUnfoldAreInverse(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 120))
	vocab := []string{"rsag:", "rank", "0", "(node1):", "watchdog:", "timing", "reduce-scatter", "+", "all-gather", "at",
		"4096", "bytes", "did", "not", "finish;", "hang:", "no", "rank", "is", "behind:", "ranks", "0-2", "wait;", "in",
		"/a/very/long/path/" + strings.Repeat("d", 130) + "/config.toml;", "é", "x;", ";"}
	for i := range 2000 {
		width := 20 + rng.IntN(120)
		var ws []string
		for range 1 + rng.IntN(80) {
			ws = append(ws, vocab[rng.IntN(len(vocab))])
		}
		line := strings.Repeat(" ", rng.IntN(3)*2) + strings.Join(ws, " ")
		folded := Line(line, width)
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkFolded(t, line, folded, width) })
		if t.Failed() {
			return
		}
	}
}

// Unfold joins only what Line would have folded: a launcher's indented
// list, a usage text and another tool's deeper indentation stay.
func TestUnfoldLeavesOtherIndentation(t *testing.T) {
	for _, text := range []string{
		"prterun detected that one or more processes exited with non-zero status,\nthus causing the job to be terminated. " +
			"The first process to do so was:\n\n   Process name: [prterun-vm-1234@1,0]\n   Exit code:    2\n",
		"Usage:\n  mpirun -np 4 ./rsag -config configs/ch7.toml\n  sbatch slurm/ch7.sbatch\n",
		"healthcheck: " + strings.Repeat("word ", 22) + "\n    and the rest of it",
		"  Process name: x\n  Exit code: 2",
	} {
		if got := Unfold(text, Width); got != text {
			t.Errorf("Unfold changed\n%s\ninto\n%s", text, got)
		}
	}
	// Two folded messages one after the other stay two.
	a, b := "rsag: "+strings.Repeat("first ", 30), "rsag: "+strings.Repeat("second; ", 20)
	if got := Unfold(Line(a, Width)+"\n"+Line(b, Width)+"\n", Width); got != a+"\n"+b+"\n" {
		t.Errorf("two messages unfold to\n%s", got)
	}
}

// The writer folds each line a Write completes, in one Write of its own;
// it keeps the lines it is told to, and leaves a line an earlier Write
// began.
func TestWriter(t *testing.T) {
	var b countingWriter
	w := NewWriterKeeping(&b, func(l string) bool { return strings.HasPrefix(l, "|") })
	long := "rsag: rank 1 (node2): " + strings.Repeat("word ", 40) + "end"
	table := "|" + strings.Repeat("-", 150) + "|"
	fmt.Fprintf(w, "%s\n%s\nshort\n", long, table)
	if want := Line(long, Width) + "\n" + table + "\nshort\n"; b.String() != want || b.writes != 1 {
		t.Errorf("%d writes of\n%s\nwant one of\n%s", b.writes, b.String(), want)
	}
	b.Reset()
	fmt.Fprint(w, "partial ")
	fmt.Fprint(w, strings.Repeat("x ", 100)+"\n")
	if strings.Count(b.String(), "\n") != 1 {
		t.Errorf("a line begun by an earlier Write was folded:\n%s", b.String())
	}
	if plain := NewWriter(&b); NewWriter(plain) != plain {
		t.Errorf("a folding writer was wrapped again")
	}
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.Buffer.Write(p)
}

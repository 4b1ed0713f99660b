package outdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"rsag/internal/atomicfile"
	"rsag/internal/rankset"
)

// notePrefix names the notes a rank leaves in the output directory when
// it fails on its own (its watchdog, an error only it saw) just before it
// ends the job: rank 0, which the launcher then ends with a signal, reads
// them to say which rank failed first. The directory is the one place
// every rank can write that outlives a rank. Rank 0 clears them when it
// takes the lock: a note there is this run's.
const notePrefix = ".rsag-note-rank"

// Note is what a rank said as it failed.
type Note struct {
	Rank int
	Text string
}

// LeaveNote writes rank's note (atomicfile.Write: never through a link).
// It is best effort: the rank is failing already, and its own message on
// stderr says the same.
func LeaveNote(dir string, rank int, text string) {
	_ = atomicfile.Write(filepath.Join(dir, notePrefix+strconv.Itoa(rank)), []byte(text))
}

// maxNoteBytes bounds a note read back: a rank's one message.
const maxNoteBytes = 64 << 10

// NotesText is what the notes say, joined for a run.json reason.
// Past foldAbove notes, ranks that said the same (after their "rank N
// (host): ") are said once, their ranks as ranges.
func NotesText(notes []Note) string {
	said := make([]string, len(notes))
	for i, n := range notes {
		said[i] = n.Text
	}
	if len(notes) <= foldAbove {
		return strings.Join(said, "; ")
	}
	var order []string
	by := map[string][]int{}
	for _, n := range notes {
		msg := n.Text
		if _, rest, ok := strings.Cut(n.Text, "): "); ok && strings.HasPrefix(n.Text, "rank ") {
			msg = rest
		}
		if _, ok := by[msg]; !ok {
			order = append(order, msg)
		}
		by[msg] = append(by[msg], n.Rank)
	}
	said = said[:0]
	for i, msg := range order {
		if i == rankset.MaxParts {
			said = append(said, fmt.Sprintf("and %d other messages", len(order)-i))
			break
		}
		said = append(said, fmt.Sprintf("%s: %s", rankset.Ranks(by[msg]), msg))
	}
	return strings.Join(said, "; ")
}

// Notes reads the notes in dir, in rank order.
func Notes(dir string) []Note {
	entries, _ := os.ReadDir(dir)
	var notes []Note
	for _, e := range entries {
		r, err := strconv.Atoi(strings.TrimPrefix(e.Name(), notePrefix))
		if !strings.HasPrefix(e.Name(), notePrefix) || err != nil {
			continue
		}
		if b, err := atomicfile.ReadIn(dir, e.Name(), maxNoteBytes); err == nil {
			notes = append(notes, Note{Rank: r, Text: strings.TrimSpace(string(b))})
		}
	}
	slices.SortFunc(notes, func(a, b Note) int { return a.Rank - b.Rank })
	return notes
}

// ClearNotes removes every note in dir (an earlier run's, once the lock
// is held), and their temporaries. A note's name held by anything but a
// regular file is not rsag's: it is refused, not removed (CheckEntries).
func ClearNotes(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), notePrefix) {
			continue
		}
		if err := notRegular(dir, e); err != nil {
			return err
		}
		if err := atomicfile.Remove(dir, e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing an earlier run's note: %w", err)
		}
	}
	return nil
}

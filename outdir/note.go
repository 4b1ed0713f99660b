package outdir

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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

// LeaveNote writes rank's note. It is best effort: the rank is failing
// already, and its own message on stderr says the same.
func LeaveNote(dir string, rank int, text string) {
	_ = os.WriteFile(filepath.Join(dir, notePrefix+strconv.Itoa(rank)), []byte(text), 0o644)
}

// NotesText is what the notes say, joined for a run.json reason.
func NotesText(notes []Note) string {
	said := make([]string, len(notes))
	for i, n := range notes {
		said[i] = n.Text
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
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			notes = append(notes, Note{Rank: r, Text: strings.TrimSpace(string(b))})
		}
	}
	slices.SortFunc(notes, func(a, b Note) int { return a.Rank - b.Rank })
	return notes
}

// ClearNotes removes every note in dir (an earlier run's, once the lock
// is held).
func ClearNotes(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), notePrefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("removing an earlier run's note: %w", err)
			}
		}
	}
	return nil
}

package outdir

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"rsag/internal/atomicfile"
)

// Earlier is what earlier runs left in a directory: the files the earlier
// run's run.json claims as its own (Record.Files: run.json, its files and
// their temporaries) and any other file with one of rsag's names, which no
// run.json there claims.
type Earlier struct {
	Dir     string
	Own     []string // run.json first
	Foreign []string
	// RunErr is why run.json, which is there, could not be read: then no
	// file there can be told to be its.
	RunErr error
}

// Survey lists what earlier runs left in dir; nothing when dir does not
// exist. Only regular files count, in dir and in the folders of rsag's
// there (isOutput(name + "/"): ranks/). isOutput says whether a name is
// one of the files a run writes (report.IsOutput); run.json always is.
func Survey(dir string, isOutput func(string) bool) (Earlier, error) {
	ours := func(name string) bool { return name == RunFile || isOutput(name) }
	e := Earlier{Dir: dir}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return e, nil
	}
	if err != nil {
		return e, err
	}
	own := map[string]bool{}
	if slices.ContainsFunc(entries, func(d os.DirEntry) bool { return d.Name() == RunFile && d.Type().IsRegular() }) {
		run, err := ReadRecord(dir)
		if err != nil {
			e.RunErr = err
		} else {
			own[RunFile] = true
			for _, f := range run.Files {
				// A record names rsag's files, flat or in rsag's folders;
				// anything else in it (a path out, a user's file) is never
				// the run's to remove.
				if filepath.IsLocal(f) && filepath.Clean(f) == f && ours(f) {
					own[f] = true
				}
			}
		}
	}
	var names []string
	for _, d := range entries {
		switch name := d.Name(); {
		case d.Type().IsRegular():
			names = append(names, name)
		case d.IsDir() && isOutput(name+"/"):
			inner, err := os.ReadDir(filepath.Join(dir, name))
			if err != nil {
				return e, err
			}
			for _, f := range inner {
				if f.Type().IsRegular() {
					names = append(names, name+"/"+f.Name())
				}
			}
		}
	}
	for _, name := range names {
		folder, base := path.Split(name)
		target, temp := atomicfile.TargetOf(base)
		target = folder + target
		temp = temp && ours(target)
		switch {
		case own[name] || (temp && own[target]):
			e.Own = append(e.Own, name)
		case ours(name) || temp:
			e.Foreign = append(e.Foreign, name)
		}
	}
	// run.json first: it says what the earlier run was.
	slices.SortStableFunc(e.Own, func(a, b string) int { return boolInt(a != RunFile) - boolInt(b != RunFile) })
	return e, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Empty reports whether no earlier run left anything.
func (e Earlier) Empty() bool { return len(e.Own) == 0 && len(e.Foreign) == 0 && e.RunErr == nil }

// Refusal is why a run may not write into the directory, nil when it may:
// without overwrite, any earlier result; with it, a run.json that cannot
// be read, or files with rsag's names that no run.json claims.
func (e Earlier) Refusal(overwrite bool) error {
	switch {
	case !overwrite && !e.Empty():
		all := append(append([]string(nil), e.Own...), e.Foreign...)
		return fmt.Errorf("it already holds results of an earlier run (%s): pass -overwrite to replace them, or choose another -output-dir", few(all))
	case !overwrite:
		return nil
	case e.RunErr != nil:
		return fmt.Errorf("its %s cannot be read (%v), so which files there are an earlier run's cannot be told: "+
			"-overwrite removes only the files an earlier run's %s lists; move them away yourself, or choose another -output-dir",
			RunFile, e.RunErr, RunFile)
	case len(e.Foreign) > 0:
		return fmt.Errorf("it holds files with rsag's names that no %s there lists as its own (%s): "+
			"-overwrite removes only the files an earlier run's %s lists; move these away yourself, or choose another -output-dir",
			RunFile, few(e.Foreign), RunFile)
	}
	return nil
}

// Remove removes the earlier run's own files, and nothing else. A file
// already gone is not an error: ranks that share the directory remove the
// same files.
func (e Earlier) Remove() error {
	var errs []error
	folders := map[string]bool{}
	for _, name := range e.Own {
		// unlinkat(2): a link that took a file's place since the survey is
		// removed itself, never what it points to, and a directory never;
		// a folder of rsag's is reached without following a link.
		if err := atomicfile.Remove(e.Dir, name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		if folder := path.Dir(name); folder != "." {
			folders[folder] = true
		}
	}
	// A folder goes once it is empty: what else is in it stays, and it.
	for _, folder := range slices.Sorted(maps.Keys(folders)) {
		if err := atomicfile.RemoveDirIn(e.Dir, folder); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// few names up to five files, and how many more.
func few(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}

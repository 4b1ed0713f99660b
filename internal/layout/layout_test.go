package layout

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/ARCHITECTURE.md's table from Packages and Rules")

// root is the module's root: this package is internal/layout.
var root = filepath.Join("..", "..")

// codeImports is what go list says each of rsag's packages imports of
// rsag's, by path inside the module ("main" for the root). Every build
// tag rsag has is on, so that the test phase's file counts too, and cgo,
// so that mpi's files do.
func codeImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps", "-json=ImportPath,Module,Imports,Error", "-tags=rsag_mpicc,rsag_testphase", "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	code := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath string
			Module     *struct{ Path string }
			Imports    []string
			Error      *struct{ Err string }
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		if p.Module == nil || p.Module.Path != "rsag" {
			continue // the standard library and other modules
		}
		if p.Error != nil {
			t.Fatalf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		var mine []string
		for _, imp := range p.Imports {
			if path, ok := inModule(imp); ok {
				mine = append(mine, path)
			}
		}
		path, _ := inModule(p.ImportPath)
		code[path] = mine
	}
	if len(code) < 10 || code["main"] == nil {
		t.Fatalf("go list gave %d of rsag's packages, main's imports %v: not the module", len(code), code["main"])
	}
	return code
}

// inModule is an import path's path inside the module.
func inModule(imp string) (string, bool) {
	if imp == "rsag" {
		return "main", true
	}
	path, ok := strings.CutPrefix(imp, "rsag/")
	return path, ok
}

func TestTheCodeKeepsTheLayout(t *testing.T) {
	for _, w := range Check(codeImports(t), Packages, Rules) {
		t.Error(w)
	}
}

const (
	begin = "<!-- imports: written by `go test ./internal/layout -update` from internal/layout/layout.go; edit it there -->\n"
	end   = "<!-- end of imports -->\n"
)

func TestArchitectureDocShowsTheTable(t *testing.T) {
	path := filepath.Join(root, "docs", "ARCHITECTURE.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), begin)
	_, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the markers around its imports table:\n%s...\n%s", path, begin, end)
	}
	want := before + begin + Markdown(Packages, Rules) + end + after
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(doc) != want {
		t.Errorf("%s's imports table is not internal/layout's: run go test ./internal/layout -update", path)
	}
}

// A checker that finds nothing proves nothing: each kind of drift, on a
// made-up layout, is caught and named.
func TestCheckCatchesEachBreak(t *testing.T) {
	table := []Package{
		{"main", "", []string{"job"}},
		{"job", "", []string{"report", "phases"}},
		{"report", "", []string{"coll"}},
		{"phases", "", []string{"coll"}},
		{"coll", "", nil},
	}
	fine := map[string][]string{"main": {"job"}, "job": {"report", "phases"}, "report": {"coll"}, "phases": {"coll"}, "coll": nil}
	if w := Check(fine, table, Rules); len(w) != 0 {
		t.Fatalf("a layout that holds: %q", w)
	}
	for _, c := range []struct {
		name string
		edit func(code map[string][]string, table []Package) []Package
		want string
	}{
		{"report imports phases, table and all", func(code map[string][]string, table []Package) []Package {
			code["report"] = append(code["report"], "phases")
			table[2].Imports = append(table[2].Imports, "phases")
			return table
		}, "report imports phases, breaking the rule: report, report/page and report/plot write what they are given"},
		{"an import the table lacks", func(code map[string][]string, table []Package) []Package {
			code["phases"] = nil
			code["report"] = append(code["report"], "phases")
			return table
		}, "report imports phases, which internal/layout's table does not list"},
		{"an import the code lacks", func(code map[string][]string, table []Package) []Package {
			code["job"] = []string{"report"}
			return table
		}, "internal/layout's table says job imports phases, which it does not"},
		{"a package the table lacks", func(code map[string][]string, table []Package) []Package {
			code["newthing"] = []string{"coll"}
			return table
		}, "newthing is not in internal/layout's table"},
		{"an import up the table", func(code map[string][]string, table []Package) []Package {
			code["coll"] = []string{"phases"}
			table[4].Imports = []string{"phases"}
			return table
		}, "coll imports phases, which the table lists above it"},
		{"a package below job imports job", func(code map[string][]string, table []Package) []Package {
			code["phases"] = append(code["phases"], "job")
			table[3].Imports = append(table[3].Imports, "job")
			return table
		}, "phases imports job, breaking the rule: nothing but main imports job"},
		{"a product package imports the test kit", func(code map[string][]string, table []Package) []Package {
			code["report"] = append(code["report"], "internal/testkit/inmem")
			return append(table, Package{"internal/testkit/inmem", "", nil})
		}, "report imports internal/testkit/inmem, breaking the rule: no product package imports the test kit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code := map[string][]string{}
			for k, v := range fine {
				code[k] = slices.Clone(v)
			}
			tab := slices.Clone(table)
			for i := range tab {
				tab[i].Imports = slices.Clone(tab[i].Imports)
			}
			tab = c.edit(code, tab)
			got := Check(code, tab, Rules)
			if !slices.ContainsFunc(got, func(w string) bool { return strings.Contains(w, c.want) }) {
				t.Errorf("want a complaint containing %q, got %q", c.want, got)
			}
		})
	}
}

// Each rule forbids something: an import it is written against breaks it,
// so that a rule that never fires (a typo in a name) is found.
func TestEachRuleForbidsSomething(t *testing.T) {
	against := map[string]Edge{
		"report, report/page and report/plot": {"report/page", "locate"},
		"nothing but main imports job":        {"config", "job"},
		"the experiments and the analysis":    {"locate", "report/plot"},
		"no package imports main":             {"job", "main"},
		"mpi (cgo)":                           {"phases", "mpi"},
		"coll, the ground floor":              {"coll", "internal/quantile"},
		"a backend knows only the contract":   {"ncclx", "phases"},
		"no product package imports the test": {"job", "internal/testkit/inmem"},
	}
	for _, r := range Rules {
		found := false
		for prefix, e := range against {
			if strings.HasPrefix(r.Says, prefix) {
				found = true
				if !r.Breaks(e.From, e.To) {
					t.Errorf("%s -> %s does not break %q", e.From, e.To, r.Says)
				}
			}
		}
		if !found {
			t.Errorf("no import written against the rule %q", r.Says)
		}
	}
}

package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stepline/stepline/internal/testenv"
)

// TestNoRegexpInitialisers pins that no package of this module the CLI
// links compiles a regular expression in its initialisers: every command
// (stepline version too) runs every linked package's initialisers, and a
// pattern compiled there costs each start its compile, used or not. A
// package-level pattern is written with internal/lazyregexp, or read by
// hand. Third-party initialisers (gojsonschema's, the AWS SDK's) are
// outside this pin.
func TestNoRegexpInitialisers(t *testing.T) {
	if testing.Short() {
		t.Skip("lists the CLI's packages with go list")
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{.Dir}} {{join .GoFiles \",\"}}{{end}}", "./cmd/stepline")
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/stepline/stepline/"
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || !strings.HasPrefix(f[0], module) {
			continue
		}
		for _, name := range strings.Split(f[2], ",") {
			for _, at := range regexpInitialisers(t, filepath.Join(f[1], name)) {
				t.Errorf("%s compiles a regexp in its initialisers", at)
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d files of the module, want the CLI's (hundreds):\n%s", checked, out)
	}
}

// regexpInitialisers returns the position of each call to package
// regexp's Compile, CompilePOSIX, MustCompile or MustCompilePOSIX that a
// package-level variable's initialiser of the file makes (a function
// literal's body is not run by the initialiser unless called there, so
// it is searched only when it is called).
func regexpInitialisers(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	regexpName := ""
	for _, imp := range file.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == "regexp" {
			regexpName = "regexp"
			if imp.Name != nil {
				regexpName = imp.Name.Name
			}
		}
	}
	if regexpName == "" {
		return nil
	}
	var found []string
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.FuncLit:
			return false // searched where it is called (below)
		case *ast.CallExpr:
			if lit, ok := x.Fun.(*ast.FuncLit); ok {
				ast.Inspect(lit.Body, visit)
			}
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == regexpName && isRegexpCompile(sel.Sel.Name) {
					found = append(found, fset.Position(x.Pos()).String())
				}
			}
		}
		return true
	}
	for _, d := range file.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.VAR {
			for _, s := range g.Specs {
				for _, v := range s.(*ast.ValueSpec).Values {
					ast.Inspect(v, visit)
				}
			}
		}
	}
	return found
}

func isRegexpCompile(name string) bool {
	switch name {
	case "Compile", "CompilePOSIX", "MustCompile", "MustCompilePOSIX":
		return true
	}
	return false
}

// TestRegexpInitialisers: what the pin above counts as compiling at
// initialisation, and what it does not.
func TestRegexpInitialisers(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      int
	}{
		{"package level", "import \"regexp\"\nvar a = regexp.MustCompile(`a`)", 1},
		{"in a var block, two", "import \"regexp\"\nvar (\n\ta = regexp.MustCompile(`a`)\n\tb, _ = regexp.Compile(`b`)\n)", 2},
		{"renamed import", "import re \"regexp\"\nvar a = re.MustCompilePOSIX(`a`)", 1},
		{"called function literal", "import \"regexp\"\nvar a = func() *regexp.Regexp { return regexp.MustCompile(`a`) }()", 1},
		{"function literal not called", "import \"regexp\"\nvar a = func() *regexp.Regexp { return regexp.MustCompile(`a`) }", 0},
		{"in a function", "import \"regexp\"\nfunc f() *regexp.Regexp { return regexp.MustCompile(`a`) }", 0},
		{"other package's MustCompile", "import \"regexp\"\nvar _ *regexp.Regexp\nvar a = other.MustCompile(`a`)", 0},
		{"no regexp import", "var a = regexp.MustCompile(`a`)", 0},
		{"match, not compile", "import \"regexp\"\nvar a, _ = regexp.MatchString(`a`, `a`)", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.go")
			if err := os.WriteFile(path, []byte("package x\n"+c.src+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := regexpInitialisers(t, path); len(got) != c.want {
				t.Errorf("found %q, want %d", got, c.want)
			}
		})
	}
}

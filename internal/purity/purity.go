// Package purity checks, from a package's own test, that the package is
// pure by its dependencies: `go list -deps` of it names nothing outside the
// standard library but the module packages it is allowed, none of the
// standard packages through which code reaches the world, and its own
// imports are the ones allowed. The engine's core and the contender
// machine are held to it; the compiler then keeps them so, whatever their
// files are named.
package purity

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Unreachable are standard packages through which code reaches the world,
// waits on it or logs to it: none may be anywhere among a pure package's
// dependencies. (fmt brings os, sync, syscall and time in, for its
// printing to files; a package's own imports are held to Rules.Imports.)
var Unreachable = []string{"net", "context", "log", "os/exec", "os/signal", "net/http", "plugin"}

// Rules are what one package may reach.
type Rules struct {
	Self string // the package's import path
	// Imports are the package's own imports allowed: pure packages of the
	// standard library, and the module packages whose vocabulary it uses.
	Imports map[string]bool
	// ModulePackages are the only packages outside the standard library
	// the package may reach, through any path of imports (Self among them).
	ModulePackages map[string]bool
}

// Check runs go list -deps in the test's directory (the package's own) and
// fails t on every dependency the rules do not allow.
func Check(t testing.TB, r Rules) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}\t{{.Standard}}\t{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps: %v\n%s", err, stderr)
	}
	var deps []string
	for line := range strings.Lines(strings.TrimSpace(string(out))) {
		fields := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(fields) != 3 {
			t.Fatalf("go list -deps: unexpected line %q", line)
		}
		path, standard, imports := fields[0], fields[1] == "true", strings.Fields(fields[2])
		deps = append(deps, path)
		switch {
		case !standard && !r.ModulePackages[path]:
			t.Errorf("depends on %s, outside the standard library", path)
		case slices.ContainsFunc(Unreachable, func(p string) bool { return path == p || strings.HasPrefix(path, p+"/") }):
			t.Errorf("depends on %s", path)
		}
		if path == r.Self {
			for _, imp := range imports {
				if !r.Imports[imp] {
					t.Errorf("imports %s", imp)
				}
			}
		}
	}
	if !slices.Contains(deps, r.Self) {
		t.Fatalf("go list -deps did not list the package itself: %v", deps)
	}
}

// durations is what a pure package may use of package time: durations,
// never the clock or a timer (its shell passes the time in).
var durations = map[string]bool{"Duration": true, "Nanosecond": true, "Microsecond": true,
	"Millisecond": true, "Second": true, "Minute": true, "Hour": true}

// CheckCode holds the non-test files of dirs (relative to the test's
// package) to what imports cannot show: no goroutine, no channel, no
// channel send, and of package time only durations.
func CheckCode(t *testing.T, dirs ...string) {
	t.Helper()
	var files []string
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(names) == 0 {
			t.Fatalf("the files of %s: %v %v", dir, names, err)
		}
		files = append(files, slices.DeleteFunc(names, func(name string) bool { return strings.HasSuffix(name, "_test.go") })...)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a goroutine at %v", name, fset.Position(n.Pos()))
			case *ast.ChanType:
				t.Errorf("%s: a channel at %v", name, fset.Position(n.Pos()))
			case *ast.SendStmt:
				t.Errorf("%s: a channel send at %v", name, fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && !durations[n.Sel.Name] {
					t.Errorf("%s: time.%s at %v", name, n.Sel.Name, fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

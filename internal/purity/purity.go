// Package purity checks, from a package's own test, that the package is
// pure by its dependencies: `go list -deps` of it names nothing outside the
// standard library but the module packages it is allowed, none of the
// standard packages through which code reaches the world, and its own
// imports are the ones allowed. The engine's core and the contender
// machine are held to it; the compiler then keeps them so, whatever their
// files are named.
package purity

import (
	"os/exec"
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

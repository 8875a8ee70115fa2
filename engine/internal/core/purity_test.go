package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// The core is deterministic by construction: no goroutine, no client, no
// clock, no timer, no logger, no randomness of its own, and nothing of the
// runtime (package engine). Being a package of its own, what it can reach
// is what it imports: these tests hold its dependencies to that, and its
// code to what an import list cannot show.

// allowedImports are the core's own imports: pure packages of the standard
// library (time for durations only; see TestCoreCode), and the packages of
// the module it shares a vocabulary with.
var allowedImports = map[string]bool{
	"bytes": true, "errors": true, "fmt": true, "maps": true, "math": true, "path": true, "slices": true, "strings": true,
	"time": true,
	"github.com/turnstile-go/turnstile/engine/internal/contender": true,
	"github.com/turnstile-go/turnstile/engine/internal/input":     true,
	"github.com/turnstile-go/turnstile/events":                    true,
	"github.com/turnstile-go/turnstile/internal/nodename":         true,
	"github.com/turnstile-go/turnstile/queue":                     true,
}

// allowedModulePackages are the only packages outside the standard library
// the core may reach, through any path of imports: no ZooKeeper client, no
// runtime.
var allowedModulePackages = map[string]bool{
	"github.com/turnstile-go/turnstile/engine/internal/core":      true,
	"github.com/turnstile-go/turnstile/engine/internal/contender": true,
	"github.com/turnstile-go/turnstile/engine/internal/input":     true,
	"github.com/turnstile-go/turnstile/events":                    true,
	"github.com/turnstile-go/turnstile/internal/nodename":         true,
	"github.com/turnstile-go/turnstile/queue":                     true,
}

// unreachable are standard packages through which code reaches the world,
// waits on it or logs to it; none may be anywhere among the core's
// dependencies. (fmt brings os, sync, syscall and time in, for its
// printing to files, and nodename crypto/rand, for the ids the runtime
// makes; the core's own imports are held to allowedImports instead.)
var unreachable = []string{"net", "context", "log", "os/exec", "os/signal", "net/http", "plugin"}

// TestPure: go list -deps of the core names nothing outside the standard
// library but the vocabulary it shares, and its own imports are pure ones.
func TestPure(t *testing.T) {
	const self = "github.com/turnstile-go/turnstile/engine/internal/core"
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
		case !standard && !allowedModulePackages[path]:
			t.Errorf("depends on %s, outside the standard library", path)
		case slices.ContainsFunc(unreachable, func(p string) bool { return path == p || strings.HasPrefix(path, p+"/") }):
			t.Errorf("depends on %s", path)
		}
		if path == self {
			for _, imp := range imports {
				if !allowedImports[imp] {
					t.Errorf("imports %s", imp)
				}
			}
		}
	}
	if !slices.Contains(deps, self) {
		t.Fatalf("go list -deps did not list the package itself: %v", deps)
	}
}

// allowedTime is what the core may use of package time: durations, never
// the clock or a timer.
var allowedTime = map[string]bool{"Duration": true, "Nanosecond": true, "Microsecond": true,
	"Millisecond": true, "Second": true, "Minute": true, "Hour": true}

// TestCoreCode holds the code of the core, and of the contender machine it
// steps, to what imports cannot show: no goroutine, no channel, and of
// package time only durations. Every non-test file of the two packages is
// read, whatever its name.
func TestCoreCode(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "../contender"} {
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
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && !allowedTime[n.Sel.Name] {
					t.Errorf("%s: time.%s at %v", name, n.Sel.Name, fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

// Every queued waiter keeps one entry; keep it within its size class.
func TestEntryFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 256 {
		t.Fatalf("entry is %d bytes, want at most 256: every waiter pays for it", n)
	}
}

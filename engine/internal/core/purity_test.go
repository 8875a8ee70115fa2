package core

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/turnstile-go/turnstile/internal/purity"
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
	"github.com/turnstile-go/turnstile/engine/internal/cancelgroup": true,
	"github.com/turnstile-go/turnstile/engine/internal/contender":   true,
	"github.com/turnstile-go/turnstile/engine/internal/input":       true,
	"github.com/turnstile-go/turnstile/events":                      true,
	"github.com/turnstile-go/turnstile/internal/nodename":           true,
	"github.com/turnstile-go/turnstile/queue":                       true,
}

// allowedModulePackages are the only packages outside the standard library
// the core may reach, through any path of imports: no ZooKeeper client, no
// runtime.
var allowedModulePackages = map[string]bool{
	"github.com/turnstile-go/turnstile/engine/internal/core":        true,
	"github.com/turnstile-go/turnstile/engine/internal/cancelgroup": true,
	"github.com/turnstile-go/turnstile/engine/internal/contender":   true,
	"github.com/turnstile-go/turnstile/engine/internal/input":       true,
	"github.com/turnstile-go/turnstile/events":                      true,
	"github.com/turnstile-go/turnstile/internal/nodename":           true,
	"github.com/turnstile-go/turnstile/queue":                       true,
}

// TestPure: go list -deps of the core names nothing outside the standard
// library but the vocabulary it shares, and its own imports are pure ones.
// (nodename brings crypto/rand in, for the ids the runtime makes; the
// core's own imports are held to allowedImports.)
func TestPure(t *testing.T) {
	purity.Check(t, purity.Rules{
		Self:           "github.com/turnstile-go/turnstile/engine/internal/core",
		Imports:        allowedImports,
		ModulePackages: allowedModulePackages,
	})
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

package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// coreFiles are the files of the engine's deterministic core (see core.go).
// They must reach nothing of the outside world. The contender machine's
// package (internal/contender) is held to the same by this test, file by
// file, and to its dependencies by its own (TestPure: go list -deps).
var coreFiles = []string{
	"core.go", "ready.go", "contenders.go", "replies.go", "handoff.go", "listings.go",
	"foreign.go", "watches.go", "cancel.go", "revoke.go", "timers.go", "session.go", "groupcommit.go", "prediction.go",
}

// forbiddenImports are packages through which code reaches the world: the
// client, the network, the file system, the scheduler, randomness.
var forbiddenImports = map[string]bool{
	"github.com/go-zookeeper/zk": true, "net": true, "os": true, "sync": true, "sync/atomic": true,
	"math/rand": true, "math/rand/v2": true, "crypto/rand": true, "runtime": true, "syscall": true,
}

// allowedTime is what the core may use of package time: durations, never
// the clock or a timer.
var allowedTime = map[string]bool{"Duration": true, "Nanosecond": true, "Microsecond": true,
	"Millisecond": true, "Second": true, "Minute": true, "Hour": true}

// The core is deterministic by construction: no goroutine, no client, no
// clock, no timer, no randomness of its own. This test holds it to that,
// file by file; the runtime (runtime.go, executor.go) is where the world is.
func TestCoreReachesNothingOutside(t *testing.T) {
	machine, err := filepath.Glob("internal/contender/*.go")
	if err != nil || len(machine) == 0 {
		t.Fatalf("the contender machine's files: %v %v", machine, err)
	}
	machine = slices.DeleteFunc(machine, func(name string) bool { return strings.HasSuffix(name, "_test.go") })
	fset := token.NewFileSet()
	for _, name := range slices.Concat(coreFiles, machine) {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if forbiddenImports[p] {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: a goroutine at %v", name, fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && !allowedTime[n.Sel.Name] {
					t.Errorf("%s: time.%s at %v", name, n.Sel.Name, fset.Position(n.Pos()))
				}
			case *ast.SendStmt:
				t.Errorf("%s: a channel send at %v", name, fset.Position(n.Pos()))
			}
			return true
		})
	}
}

package cohort

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/internal/purity"
)

// The cohort machine is pure: no client, no network, no goroutine, no
// lock, no clock, no logger, nothing of the runtime. Being a package of its
// own, what it can reach is what it imports: these tests hold its
// dependencies to that, and its code to what an import list cannot show.

var allowedImports = map[string]bool{
	"bytes": true, "errors": true, "fmt": true, "time": true,
	"github.com/turnstile-go/turnstile/engine/internal/cancelgroup": true,
	"github.com/turnstile-go/turnstile/queue":                       true,
}

var allowedModulePackages = map[string]bool{
	"github.com/turnstile-go/turnstile/engine/internal/cohort":      true,
	"github.com/turnstile-go/turnstile/engine/internal/cancelgroup": true,
	"github.com/turnstile-go/turnstile/queue":                       true,
}

// TestPure: go list -deps of the machine names nothing outside the
// standard library but queue and the cancel groups' membership, and its own
// imports are pure ones (sync, os and context among those refused).
func TestPure(t *testing.T) {
	purity.Check(t, purity.Rules{
		Self:           "github.com/turnstile-go/turnstile/engine/internal/cohort",
		Imports:        allowedImports,
		ModulePackages: allowedModulePackages,
	})
}

// allowedTime is what the machine may use of package time: durations, never
// the clock or a timer (the shell passes the time in).
var allowedTime = map[string]bool{"Duration": true, "Nanosecond": true, "Microsecond": true,
	"Millisecond": true, "Second": true, "Minute": true, "Hour": true}

// TestCode holds the machine's code, and the cancel groups', to what
// imports cannot show: no goroutine, no channel, and of package time only
// durations.
func TestCode(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "../cancelgroup"} {
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
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "time" && !allowedTime[n.Sel.Name] {
					t.Errorf("%s: time.%s at %v", name, n.Sel.Name, fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

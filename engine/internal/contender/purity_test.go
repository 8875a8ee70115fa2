package contender

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The machine's own imports: pure packages of the standard library, and
// the vocabulary it shares with the engine's core.
var allowedImports = map[string]bool{
	"errors": true, "fmt": true, "strings": true, "strconv": true, "slices": true, "sort": true,
	"github.com/turnstile-go/turnstile/engine/internal/input": true,
	"github.com/turnstile-go/turnstile/queue":                 true,
}

// allowedModulePackages are the only packages outside the standard library
// the machine may reach, through any path of imports.
var allowedModulePackages = map[string]bool{
	"github.com/turnstile-go/turnstile/engine/internal/contender": true,
	"github.com/turnstile-go/turnstile/engine/internal/input":     true,
	"github.com/turnstile-go/turnstile/queue":                     true,
}

// unreachable are standard packages through which code reaches the world
// or waits on it; none may be anywhere among the machine's dependencies.
// (fmt brings os, sync, syscall and time in, for its printing to files;
// the machine's own imports are held to allowedImports instead.)
var unreachable = []string{"net", "context", "log", "os/exec", "os/signal", "net/http", "plugin"}

// The machine is pure by its dependencies: go list -deps of this package
// names nothing outside the standard library but input and queue, no
// client and no network, and its own imports are pure ones.
func TestPure(t *testing.T) {
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
		if path == "github.com/turnstile-go/turnstile/engine/internal/contender" {
			for _, imp := range imports {
				if !allowedImports[imp] {
					t.Errorf("imports %s", imp)
				}
			}
		}
	}
	if !slices.Contains(deps, "github.com/turnstile-go/turnstile/engine/internal/contender") {
		t.Fatalf("go list -deps did not list the package itself: %v", deps)
	}
}

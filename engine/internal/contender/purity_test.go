package contender

import (
	"testing"

	"github.com/turnstile-go/turnstile/internal/purity"
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

// The machine is pure by its dependencies: go list -deps of this package
// names nothing outside the standard library but input and queue, no
// client and no network, and its own imports are pure ones.
func TestPure(t *testing.T) {
	purity.Check(t, purity.Rules{
		Self:           "github.com/turnstile-go/turnstile/engine/internal/contender",
		Imports:        allowedImports,
		ModulePackages: allowedModulePackages,
	})
}

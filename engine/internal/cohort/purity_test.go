package cohort

import (
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

// TestCode holds the machine's code, and the cancel groups', to what
// imports cannot show: no goroutine, no channel, and of package time only
// durations.
func TestCode(t *testing.T) { purity.CheckCode(t, ".", "../cancelgroup") }

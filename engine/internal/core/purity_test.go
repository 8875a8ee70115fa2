package core

import (
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
	"github.com/turnstile-go/turnstile/engine/internal/cohort":      true,
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
	"github.com/turnstile-go/turnstile/engine/internal/cohort":      true,
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

// TestCoreCode holds the code of the core, of the machines it steps
// (contenders, cohorts) and of its cancel groups' membership, to what
// imports cannot show: no goroutine, no channel, and of package time only
// durations. Every non-test file of the four packages is read, whatever
// its name.
func TestCoreCode(t *testing.T) {
	purity.CheckCode(t, ".", "../contender", "../cohort", "../cancelgroup")
}

// Every queued waiter keeps one entry; keep it within its size class.
func TestEntryFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 256 {
		t.Fatalf("entry is %d bytes, want at most 256: every waiter pays for it", n)
	}
}

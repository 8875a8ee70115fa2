package election

import (
	"context"

	"github.com/turnstile-go/turnstile/engine"
)

// Runtime is what an Election does off the engine's loop: the goroutine
// that reads an observed leader's value, the end of an observer with its
// context, and the one-off reads of Leader and of observers.
//
// It is a seam for a deterministic simulator (the engine's, in
// engine/sim_test.go), which runs every goroutine as a coroutine it
// resumes one step at a time and answers every read itself, so that a run
// follows from its seed. A program leaves it unset: each nil field is the
// default, a goroutine, context.AfterFunc, and the engine's Children and
// Data.
type Runtime struct {
	Go        func(f func())
	AfterFunc func(ctx context.Context, f func()) (stop func() bool)
	Children  func(ctx context.Context, path string) ([]string, error)
	Data      func(ctx context.Context, path string) ([]byte, error)
}

// WithRuntime replaces what the Election runs off the engine's loop; see
// Runtime.
func WithRuntime(rt Runtime) Option { return func(o *options) { o.rt = rt } }

// withDefaults fills each nil field from eng.
func (rt Runtime) withDefaults(eng *engine.Engine) Runtime {
	if rt.Go == nil {
		rt.Go = func(f func()) { go f() }
	}
	if rt.AfterFunc == nil {
		rt.AfterFunc = context.AfterFunc
	}
	if rt.Children == nil {
		rt.Children = eng.Children
	}
	if rt.Data == nil {
		rt.Data = eng.Data
	}
	return rt
}

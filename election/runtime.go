package election

import (
	"context"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/seam"
)

// runtimeOf is what an election on eng runs off the engine's loop: the
// simulator's seam (internal/seam) where it set one, and otherwise, field
// by field, a goroutine, context.AfterFunc, and the engine's Children and
// Data.
func runtimeOf(eng *engine.Engine) seam.ElectionRuntime {
	rt := seam.ElectionRuntimeOf(eng)
	if rt.Go == nil {
		rt.Go = func(f func()) { go f() }
	}
	if rt.AfterFunc == nil {
		rt.AfterFunc = context.AfterFunc
	}
	if rt.Children == nil {
		rt.Children = func(ctx context.Context, path string) ([]string, error) { return seam.Children(eng, ctx, path) }
	}
	if rt.Data == nil {
		rt.Data = func(ctx context.Context, path string) ([]byte, error) { return seam.Data(eng, ctx, path) }
	}
	return rt
}

package engine

import (
	"context"
	"fmt"
)

// A nil engine or context is a mistake in the calling code, not a fault of
// the moment: the engine's entry points report it as an invalid request
// naming what was nil, rather than die on a nil pointer somewhere inside.
var (
	errNilEngine  = fmt.Errorf("%w: nil *engine.Engine", ErrInvalidRequest)
	errNilContext = fmt.Errorf("%w: nil context.Context", ErrInvalidRequest)
	// A nil lease is released most often by a deferred Release placed
	// before the acquisition's error was checked.
	errNilLease = fmt.Errorf("%w: Release of a nil *engine.Lease", ErrInvalidRequest)
)

// checkCall reports a nil engine or context.
func checkCall(e *Engine, ctx context.Context) error {
	switch {
	case e == nil:
		return errNilEngine
	case ctx == nil:
		return errNilContext
	}
	return nil
}

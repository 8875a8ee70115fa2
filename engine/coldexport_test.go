package engine

import (
	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// ExecBatch sends ops as group commit would, as one request, and returns
// what the loop would be told of each: for tests of how a multi's results
// are attributed to its ops.
func (e *Engine) ExecBatch(ops []core.Op) []input.OpDone { return e.batch.Send(e.conn, ops) }

package engine

import (
	"fmt"
	"strings"
)

// The engine's namespace (Config.Root). Every path a caller names is a
// path inside it, and the engine adds the root on the way to the server:
// in Acquire and in the direct reads and writes, before anything is
// queued, so the loop, the contenders and the executor only ever see
// server paths. Paths go back to callers relative to it: Lease.Path and
// Lease.Node, and the paths of the observer's reports.

// serverPath is the server's path of p, a path in the engine's namespace.
// p must be valid on its own (ValidatePath); under the root it may still
// be too long.
func (e *Engine) serverPath(p string) (string, error) {
	if err := ValidatePath(p); err != nil {
		return "", err
	}
	full := e.cfg.Root + p
	if len(full) > MaxPathLen {
		return "", fmt.Errorf("%w %q: longer than %d bytes under the root %q", ErrInvalidPath, p, MaxPathLen, e.cfg.Root)
	}
	return full, nil
}

// namespacePath is the path in the engine's namespace of p, a server path
// under the root.
func (e *Engine) namespacePath(p string) string { return e.cfg.namespacePath(p) }

func (cfg *Config) namespacePath(p string) string {
	if cfg.Root == "" {
		return p
	}
	return strings.TrimPrefix(p, cfg.Root)
}

package core

import (
	"strings"

	"github.com/turnstile-go/turnstile/queue"
)

// Children of a lock path that are no lock node (another application's, or
// a name no client writes) are ignored by every recipe. The engine logs
// each such name once, through the engine's logger, as it parses the listing
// that holds it: a listing is parsed once for all its contenders, so a
// path with thousands of waiters is not looked at thousands of times.

// maxForeignLogged bounds the names the engine remembers having logged.
const maxForeignLogged = 1024

// noteForeign logs the children of l, a listing of path, that are no lock
// node and were not logged yet.
func (c *Core) noteForeign(path string, l *queue.Listing) {
	for _, name := range l.Foreign() {
		if len(c.foreignLogged) >= maxForeignLogged {
			return
		}
		if _, seen := c.foreignLogged[name]; seen {
			continue
		}
		if c.foreignLogged == nil {
			c.foreignLogged = make(map[string]struct{})
		}
		c.foreignLogged[name] = struct{}{}
		c.log(LevelWarn, "ignoring a child of a lock path that is no lock node", "path", c.namespacePath(path), "child", name)
	}
}

// namespacePath is the path in the engine's namespace of p, a server path
// under the root, as logs name it.
func (c *Core) namespacePath(p string) string {
	if c.cfg.Root == "" {
		return p
	}
	return strings.TrimPrefix(p, c.cfg.Root)
}

package lock

import (
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// decideMutex runs the mutex predicate over one listing. Children that are
// not lock nodes (other recipes' or foreign names) are ignored.
func decideMutex(children []string, self string) engine.Decision {
	nodes, _ := queue.Nodes(children)
	return engine.Decision(queue.Mutex(nodes, self))
}

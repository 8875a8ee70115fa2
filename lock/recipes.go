package lock

import (
	"slices"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// decision converts a queue predicate's verdict for the engine.
func decision(d queue.Decision) engine.Decision {
	return engine.Decision{Holds: d.Holds, Watch: d.Watch, Missing: d.Missing}
}

// decideMutex runs the mutex predicate over one listing. Children that are
// not lock nodes (other recipes' or foreign names) are ignored.
func decideMutex(children []string, self string) engine.Decision {
	nodes := parseChildren(children)
	d := decision(queue.Mutex(nodes, self))
	// The predecessor is exclusive and ahead by number: once it has held and
	// is gone, nothing is ahead of self (numbers only grow; only a downgrade
	// reuses one, and a mutex never downgrades).
	if !d.Holds && !d.Missing {
		i := slices.IndexFunc(nodes, func(n queue.Node) bool { return n.Name == self })
		d.Next = i > 0 && nodes[i-1].Name == d.Watch && nodes[i-1].Seq < nodes[i].Seq
	}
	return d
}

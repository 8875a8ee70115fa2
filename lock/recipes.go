package lock

import (
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
	return decision(queue.Mutex(parseChildren(children), self))
}

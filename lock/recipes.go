package lock

import (
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// decision converts a queue predicate's verdict for the engine. Next goes
// through as it is: the predicates set it only where the engine's handoff
// is safe (see engine.Decision.Next).
func decision(d queue.Decision) engine.Decision {
	return engine.Decision{Holds: d.Holds, Watch: d.Watch, Missing: d.Missing, Next: d.Next}
}

// decideMutex runs the mutex predicate over one listing. Children that are
// not lock nodes (other recipes' or foreign names) are ignored; the engine
// logs them.
func decideMutex(l *queue.Listing, self string) engine.Decision {
	return decision(l.Mutex(self))
}

func decideRead(l *queue.Listing, self string) engine.Decision {
	return decision(l.Read(self))
}

func decideWrite(l *queue.Listing, self string) engine.Decision {
	return decision(l.Write(self))
}

package lock

import (
	"github.com/turnstile-go/turnstile/queue"
)

// decideMutex runs the mutex predicate over one listing. Children that are
// not lock nodes (other recipes' or foreign names) are ignored; the engine
// logs them.
func decideMutex(l *queue.Listing, self string) queue.Decision {
	return l.Mutex(self)
}

func decideRead(l *queue.Listing, self string) queue.Decision {
	return l.Read(self)
}

func decideWrite(l *queue.Listing, self string) queue.Decision {
	return l.Write(self)
}

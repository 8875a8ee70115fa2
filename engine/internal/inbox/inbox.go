// Package inbox is the engine loop's queue of events.
package inbox

import (
	"sync"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// Inbox is the loop's unbounded, non-blocking queue. Put never blocks and
// never drops: it is called from the ZooKeeper client's receive goroutine,
// which must not stall, and from user goroutines. The loop alone takes
// events out, in batches.
type Inbox struct {
	mu     sync.Mutex
	events []input.Event
	ready  chan struct{}
}

// New returns an empty inbox.
func New() *Inbox {
	return &Inbox{ready: make(chan struct{}, 1)}
}

// Put appends e. It never blocks.
func (in *Inbox) Put(e input.Event) {
	in.mu.Lock()
	in.events = append(in.events, e)
	in.mu.Unlock()
	select {
	case in.ready <- struct{}{}:
	default:
	}
}

// Ready is signalled after Put; the signal may cover several events.
func (in *Inbox) Ready() <-chan struct{} { return in.ready }

// Drain moves every queued event into buf (reusing its storage) and returns
// it. The inbox keeps the old buffer for later Puts, so a steady loop
// allocates nothing.
func (in *Inbox) Drain(buf []input.Event) []input.Event {
	clear(buf[:cap(buf)])
	in.mu.Lock()
	out := in.events
	in.events = buf[:0]
	in.mu.Unlock()
	return out
}

// Len is the number of queued events.
func (in *Inbox) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.events)
}

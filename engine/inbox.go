package engine

import (
	"sync"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// inbox is the loop's queue of events: unbounded and non-blocking. Put
// never blocks and never drops: it is called from the ZooKeeper client's
// receive goroutine, which must not stall, and from user goroutines. The
// loop alone takes events out, in batches.
type inbox struct {
	mu     sync.Mutex
	events []input.Event
	ready  chan struct{}
}

// newInbox returns an empty inbox.
func newInbox() *inbox {
	return &inbox{ready: make(chan struct{}, 1)}
}

// Put appends e. It never blocks.
func (in *inbox) Put(e input.Event) {
	in.mu.Lock()
	in.events = append(in.events, e)
	in.mu.Unlock()
	select {
	case in.ready <- struct{}{}:
	default:
	}
}

// Wake is signalled after Put; the signal may cover several events.
func (in *inbox) Wake() <-chan struct{} { return in.ready }

// Drain returns every queued event, and takes buf, the batch the previous
// Drain returned, as the storage of later Puts, so a steady loop
// allocates nothing. It clears buf's events, not its capacity: a Put
// writes only below the length a batch is returned with, and a burst (a
// million acquisitions queued at once) grows the storage to its size,
// which every later turn would otherwise clear whole, however few events
// it took.
func (in *inbox) Drain(buf []input.Event) []input.Event {
	clear(buf)
	in.mu.Lock()
	out := in.events
	in.events = buf[:0]
	in.mu.Unlock()
	return out
}

// Len is the number of queued events.
func (in *inbox) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.events)
}

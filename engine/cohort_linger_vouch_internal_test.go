package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/queue"
)

// A waiter that joins a lingering node and leaves (its context ends)
// between its join and the wake that answers its Vouch: the wake finds
// nobody waiting and the node lingers on. The next acquisition on that
// node must be passed it at once, as any re-acquisition of a lingering
// node is, not left waiting for the linger's end (an hour here: the
// timer never fires in this test). The schedule is played exactly: the
// watchdog's clock, read by the Vouch's wake before it takes the cohorts'
// mutex, cancels the waiter's context and waits until the cancel has
// been stepped (the waiter's future failed).
func TestCohortLingerVouchOfAWaiterThatLeft(t *testing.T) {
	e := cohortEngineWith(t, CohortConfig{Linger: time.Hour, MaxHold: time.Hour})
	e.rt.afterFunc = func(time.Duration, func()) timer { return noTimer{} }
	req := Request{Path: "/p", Kind: queue.KindMutex, Cohort: true, Decide: holdsAlways}

	first := e.Acquire(context.Background(), req)
	acquires, _ := commands(e)
	if len(acquires) != 1 {
		t.Fatalf("%d acquisitions, want 1", len(acquires))
	}
	grantNode(t, e, acquires[0], 1)
	if err := resolved(t, first).Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, releases := commands(e); len(releases) != 0 {
		t.Fatalf("%d releases at the last local release, want the node lingering", len(releases))
	}

	// The leaver: its context ends while its Vouch is being answered.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	errLeft := errors.New("left before its verdict")
	var (
		leaver *Future[*Lease]
		armed  atomic.Bool
		once   sync.Once
		left   = make(chan struct{})
	)
	// The cancel is stepped on the goroutine context.AfterFunc starts; it
	// says when it is done.
	e.rt.afterDone = func(ctx context.Context, f func()) func() bool {
		return context.AfterFunc(ctx, func() { f(); close(left) })
	}
	clock := e.trust.clock
	e.trust.clock = func() time.Duration {
		if armed.Load() {
			once.Do(func() {
				cancel(errLeft)
				<-left // the cancel stepped: the waiter failed
			})
		}
		return clock()
	}
	armed.Store(true)
	leaver = e.Acquire(ctx, req)
	armed.Store(false)
	if _, err := leaver.Wait(context.Background()); !errors.Is(err, errLeft) {
		t.Fatalf("the leaver: err %v, want its context's cause", err)
	}
	// The next acquisition is passed the lingering node at once.
	next := e.Acquire(context.Background(), req)
	l, ok, err := next.Result()
	if !ok {
		t.Fatal("a re-acquisition of the lingering node after a waiter left before its verdict: not passed the node, waits for the linger's end")
	}
	if err != nil || l.carrier() == nil {
		t.Fatalf("re-acquisition: err %v, carrier %v", err, l.carrier())
	}
	if acquires, releases := commands(e); len(acquires) != 0 || len(releases) != 0 {
		t.Fatalf("%d acquisitions, %d releases for the pass, want none", len(acquires), len(releases))
	}
}

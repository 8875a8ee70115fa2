package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// passed has m's lock passed inside its cohort: a first holder, a second
// acquisition queued behind it, the first released. It returns the
// second's lease, held by a pass.
func passed(t *testing.T, eng *engine.Engine, m *lock.Mutex) *lock.Lease {
	t.Helper()
	ctx := context.Background()
	first, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting := eng.CohortStats().Waiting
	next := m.Acquire(ctx)
	eventually(t, "the second acquisition queued in the cohort", func() bool { return eng.CohortStats().Waiting > waiting })
	release(t, first)
	l, err := next.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Token()&engine.MaxCohortPasses == 0 {
		t.Fatalf("token %#x: want a pass", l.Token())
	}
	return l
}

// The loop decides every grant, by node or by pass: held still, it grants
// nothing. A lapse of trust does not wait for it: the watchdog closes the
// Lost channel of every lease it holds, a passed one's included, at once.
func TestLoopHeldStillGrantsNothingAndLapseStillLoses(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	root := testRoot(t)
	ctx := context.Background()
	ma, mb := lock.NewMutex(eng, root+"/a"), lock.NewMutex(eng, root+"/b")
	heldA := passed(t, eng, ma)
	heldB := passed(t, eng, mb)
	waiting := eng.CohortStats().Waiting
	behindA := ma.Acquire(ctx)
	eventually(t, "an acquisition queued behind the pass", func() bool { return eng.CohortStats().Waiting > waiting })

	resume := eng.HoldLoop()
	released := heldA.ReleaseAsync()                    // would pass the lock to behindA
	fresh := lock.NewMutex(eng, root+"/c").Acquire(ctx) // would be granted a node
	try := lock.NewMutex(eng, root+"/d").TryAcquire     // a try of a free lock
	tried := make(chan error, 1)
	go func() { l, err := try(ctx); tried <- err; _ = l }()
	time.Sleep(200 * time.Millisecond) // what the loop would need, many times over
	for name, f := range map[string]*engine.Future[*lock.Lease]{"the pass": behindA, "the node": fresh} {
		if _, done, _ := f.Result(); done {
			t.Errorf("%s was granted while the loop was held still", name)
		}
	}
	select {
	case err := <-tried:
		t.Errorf("a try ended (%v) while the loop was held still", err)
	default:
	}
	if _, done, _ := released.Result(); done {
		t.Error("a release ended while the loop was held still")
	}

	eng.LapseTrust()
	for name, l := range map[string]*lock.Lease{"a passed lease": heldB, "a passed lease being released": heldA} {
		select {
		case <-l.Lost():
			if !errors.Is(l.Err(), engine.ErrLost) {
				t.Errorf("%s: lost with %v, want ErrLost", name, l.Err())
			}
		default:
			t.Errorf("%s: Lost() still open after the lapse, with the loop held still", name)
		}
	}
	resume()
	if _, err := released.Wait(ctx); !errors.Is(err, engine.ErrLost) {
		t.Errorf("the release of a lease lost meanwhile: %v, want ErrLost", err)
	}
	<-tried
}

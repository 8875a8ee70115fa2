package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Linger on a real server: after the last local release the engine keeps
// its node while no other client is seen, so that its next acquisition is
// a pass; another client's arrival, the end of the linger or Close gives
// the node back.

// lingering is a configuration whose linger and hold outlast any test:
// only another client, a loss or Close ends a linger.
var lingering = engine.Config{Cohort: engine.CohortConfig{Linger: time.Hour, MaxHold: time.Hour}}

// lingerOnce takes and releases m once, and waits until the engine knows
// that nobody else waits (the cohort's listing answered) and has nothing
// in flight: the node then lingers, with nothing of the setup pending.
func lingerOnce(t *testing.T, eng *engine.Engine, m *lock.Mutex) *lock.Lease {
	t.Helper()
	l := mustGet(t, m.Acquire(context.Background()))
	release(t, l)
	eventually(t, "the linger settled", func() bool { return eng.InFlight() == 0 && eng.CohortListed(m.Path()) })
	return l
}

// A re-acquisition within the linger sends no request and gets a greater
// token, on the same node.
func TestCohortLingerReacquiresWithoutRequests(t *testing.T) {
	eng := startEngine(t, lingering)
	raw := rawConn(t)
	m := lock.NewMutex(eng, testRoot(t)+"/shard")
	first := lingerOnce(t, eng, m)
	if n := len(ephemerals(t, raw, m.Path())); n != 1 {
		t.Fatalf("%d lock nodes after the release, want the lingering one", n)
	}
	before, tok := eng.Stats(), first.Token()
	for i := range 5 {
		l := mustGet(t, m.Acquire(context.Background()))
		if l.Token() <= tok {
			t.Fatalf("re-acquisition %d: token %d not above %d", i, l.Token(), tok)
		}
		tok = l.Token()
		release(t, l)
	}
	if after := eng.Stats(); after.Requests() != before.Requests() {
		t.Fatalf("%d requests for 5 cycles within the linger (before %+v, after %+v), want 0",
			after.Requests()-before.Requests(), before, after)
	}
	if tok>>engine.TokenPassBits != first.Token()>>engine.TokenPassBits {
		t.Fatalf("token %#x after the re-acquisitions: not the first grant's node (%#x)", tok, first.Token())
	}
}

// Another client arriving (a plain go-zookeeper lock) makes the engine
// give its lingering node back, without waiting for the linger's end; the
// engine's next acquisition queues behind that client.
func TestCohortLingerGivesWayToAnotherClient(t *testing.T) {
	eng := startEngine(t, lingering)
	raw := rawConn(t)
	m := lock.NewMutex(eng, testRoot(t)+"/shard")
	first := lingerOnce(t, eng, m)

	other := zk.NewLock(raw, m.Path(), zk.WorldACL(zk.PermAll))
	locked := make(chan error, 1)
	go func() { locked <- other.Lock() }()
	var err error
	eventually(t, "the other client holds", func() bool {
		select {
		case err = <-locked:
			return true
		default:
			return false
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ephemerals(t, raw, m.Path())); n != 1 {
		t.Fatalf("%d lock nodes while the other client holds, want its own only", n)
	}
	again := m.Acquire(context.Background())
	eventually(t, "the engine queued a node", func() bool { return len(ephemerals(t, raw, m.Path())) == 2 })
	if resolved(again) {
		t.Fatal("the engine acquired while the other client holds")
	}
	if err := other.Unlock(); err != nil {
		t.Fatal(err)
	}
	l := mustGet(t, again)
	if l.Token() <= first.Token() {
		t.Fatalf("token %d after the other client, not above %d", l.Token(), first.Token())
	}
	release(t, l)
}

// The linger ends by itself: the node goes back once Linger has passed.
func TestCohortLingerEnds(t *testing.T) {
	eng := startEngine(t, engine.Config{Cohort: engine.CohortConfig{Linger: 10 * time.Millisecond, MaxHold: time.Hour}})
	raw := rawConn(t)
	m := lock.NewMutex(eng, testRoot(t)+"/shard")
	release(t, mustGet(t, m.Acquire(context.Background())))
	eventually(t, "the node given back", func() bool { return len(ephemerals(t, raw, m.Path())) == 0 })
	if s := eng.CohortStats(); s.Carriers != 1 {
		t.Fatalf("cohort stats %+v, want one grant", s)
	}
}

// Close gives a lingering node back, and the lease it was released from
// stays released.
func TestCohortLingerCloseGivesTheNodeBack(t *testing.T) {
	eng := startEngine(t, lingering)
	raw := rawConn(t)
	m := lock.NewMutex(eng, testRoot(t)+"/shard")
	lingerOnce(t, eng, m)
	if n := len(ephemerals(t, raw, m.Path())); n != 1 {
		t.Fatalf("%d lock nodes after the release, want the lingering one", n)
	}
	eng.Close()
	eventually(t, "the node given back", func() bool { return len(ephemerals(t, raw, m.Path())) == 0 })
	if _, err := m.Acquire(context.Background()).Wait(context.Background()); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("acquisition after Close: %v, want ErrClosed", err)
	}
}

// Lingering under real concurrency: one engine's workers take one lock
// again and again (passes, lingers, re-grants at the bounds) while another
// engine's worker arrives between. No two holders overlap, tokens grow in
// the order of the grants, and the other engine is served each time.
func TestCohortLingerUnderConcurrency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := startEngine(t, engine.Config{Cohort: engine.CohortConfig{Linger: time.Hour, MaxHold: 20 * time.Millisecond, MaxPasses: 50}})
	b := startEngine(t, engine.Config{})
	p := testRoot(t) + "/shard"
	var (
		mu      sync.Mutex
		holders int
		last    int64
		errs    []string
	)
	enter := func(l *lock.Lease) {
		mu.Lock()
		defer mu.Unlock()
		holders++
		if holders != 1 || l.Token() <= last {
			errs = append(errs, fmt.Sprintf("%s granted with %d holders, token %d after %d", l.Node(), holders, l.Token(), last))
		}
		last = l.Token()
	}
	leave := func() { mu.Lock(); holders--; mu.Unlock() }
	var done atomic.Bool
	var wg sync.WaitGroup
	ma := lock.NewMutex(a, p)
	for range 4 {
		wg.Go(func() {
			for !done.Load() {
				l, err := ma.Lock(ctx)
				if err != nil {
					return
				}
				enter(l)
				leave()
				if err := l.Release(ctx); err != nil {
					mu.Lock()
					errs = append(errs, "release: "+err.Error())
					mu.Unlock()
				}
			}
		})
	}
	mb := lock.NewMutex(b, p)
	for range 30 {
		time.Sleep(time.Millisecond) // let a's workers linger and pass between arrivals
		l, err := mb.Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		enter(l)
		leave()
		release(t, l)
	}
	done.Store(true)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d failures, first: %s", len(errs), errs[0])
	}
	if s := a.CohortStats(); s.Passes == 0 || s.Yielded+s.Bounded == 0 {
		t.Fatalf("cohort stats %+v: want passes and nodes given back (to the other engine, or at a bound)", s)
	}
}

// A try (TryAcquire) on a lock its own engine lingers on is passed the
// node, with no request: it would otherwise meet that node, held by no
// one, and fail whenever its listing came before the node's deletion.
// While a holder of the engine holds, a try still fails.
func TestCohortLingerTryIsPassed(t *testing.T) {
	eng := startEngine(t, lingering)
	m := lock.NewMutex(eng, testRoot(t)+"/shard")
	tok := lingerOnce(t, eng, m).Token()
	before := eng.Stats()
	for i := range 20 {
		l, err := m.TryAcquire(context.Background())
		if err != nil {
			t.Fatalf("try %d on the lingering lock: %v", i, err)
		}
		if l.Token() <= tok {
			t.Fatalf("try %d: token %d not above %d", i, l.Token(), tok)
		}
		tok = l.Token()
		release(t, l)
	}
	if after := eng.Stats(); after.Requests() != before.Requests() {
		t.Fatalf("%d requests for 20 tries within the linger, want 0", after.Requests()-before.Requests())
	}
	held := mustGet(t, m.Acquire(context.Background()))
	if _, err := m.TryAcquire(context.Background()); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("a try while the engine holds: %v, want ErrWouldBlock", err)
	}
	release(t, held)
}

package engine_test

import (
	"context"
	"errors"
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

package lock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
)

// reports records what an engine tells its observer, per contender:
// callers' acquisitions, and apart, the nodes acquired for cohorts of them
// (events.Report.Carrier).
type reports struct {
	mu       sync.Mutex
	byID     map[uint64][]events.ReportKind
	order    []uint64 // ids in the order of their first report
	carriers map[uint64]bool
}

func (r *reports) observe(rep events.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = make(map[uint64][]events.ReportKind)
	}
	if _, seen := r.byID[rep.ID]; !seen {
		r.order = append(r.order, rep.ID)
	}
	if rep.Carrier {
		if r.carriers == nil {
			r.carriers = make(map[uint64]bool)
		}
		r.carriers[rep.ID] = true
	}
	r.byID[rep.ID] = append(r.byID[rep.ID], rep.Kind)
}

// sequences returns each contender's reports, in the order contenders
// began: the callers' acquisitions, or the cohorts' carriers.
func (r *reports) sequences(carriers bool) [][]events.ReportKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]events.ReportKind
	for _, id := range r.order {
		if r.carriers[id] == carriers {
			out = append(out, slices.Clone(r.byID[id]))
		}
	}
	return out
}

// Every acquisition is reported from its start, and every report about it
// and its lease carries one ID: a granted one, a try that would block, and
// one cancelled while it waited. The two that joined a cohort are
// reported as callers, and the nodes their cohorts acquired as carriers.
func TestObserverReportsEachAcquisitionUnderOneID(t *testing.T) {
	ctx := context.Background()
	path := lockRoot(t) + "/L"
	var seen reports
	eng := startEngine(t, engine.Config{Observer: seen.observe})
	other := startEngine(t, engine.Config{})

	l, err := lock.NewMutex(eng, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}

	held, err := lock.NewMutex(other, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(ctx)
	if _, err := lock.NewMutex(eng, path).TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("TryAcquire: %v, want ErrWouldBlock", err)
	}
	wctx, cancel := context.WithCancel(ctx)
	waiting := lock.NewMutex(eng, path).Acquire(wctx)
	eventually(t, "waiter queued", func() bool { return waits(eng.Stats()) > 0 })
	cancel()
	if _, err := waiting.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}

	want := [][]events.ReportKind{
		{events.Acquiring, events.Granted, events.Released},
		{events.Acquiring, events.Failed},
		{events.Acquiring, events.Cancelled},
	}
	// The loop reports just after it resolves a future: wait for the last.
	eventually(t, "the cancelled waiter reported", func() bool {
		got := seen.sequences(false)
		return len(got) == 3 && len(got[2]) == 2 && len(seen.sequences(true)) == 2
	})
	if got := seen.sequences(false); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("reports per caller's acquisition: %v, want %v", got, want)
	}
	eventually(t, "the carriers reported", func() bool { return len(seen.sequences(true)[1]) == 2 })
	if got, want := seen.sequences(true), [][]events.ReportKind{want[0], want[2]}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("reports per cohort node: %v, want %v", got, want)
	}
}

// Sessions counts a disconnection that outlasts the session's trust, the
// expiry the server then declares, and the reconnection after it.
func TestSessionsCountsDisconnectUntrustExpiryAndReconnect(t *testing.T) {
	ctx := context.Background()
	root := lockRoot(t)
	var p netfault.Partition
	eng := startEngine(t, engine.Config{SessionTimeout: 2 * time.Second, Dialer: p.Dial})
	l, err := lock.NewMutex(eng, root+"/L").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.Sessions(); got != (engine.SessionStats{}) {
		t.Fatalf("Sessions before any fault: %+v, want zeros", got)
	}
	p.Cut()
	<-l.Lost()
	// The watchdog closes Lost() itself; the loop counts the lapse when it
	// hears of it, just after.
	lapsed := engine.SessionStats{Disconnects: 1, Untrusted: 1}
	eventually(t, "the lapse counted", func() bool { return eng.Sessions() == lapsed })
	// The server expires the session once its node is gone.
	conn := inspect(t, shared.Addr())
	eventually(t, "the lost holder's node removed by expiry", func() bool { return lockNodes(t, conn, root) == 0 })
	p.Heal()
	want := engine.SessionStats{Disconnects: 1, Reconnects: 1, Untrusted: 1, Expirations: 1}
	eventually(t, "reconnected under a new session", func() bool { return eng.Sessions() == want })
}

// InFlight counts a request whose reply has not been read, and nothing once
// it has.
func TestInFlightCountsUnansweredRequests(t *testing.T) {
	ctx := context.Background()
	var g netfault.Gate
	eng := startEngine(t, engine.Config{Dialer: g.Dial})
	if n := eng.InFlight(); n != 0 {
		t.Fatalf("InFlight of an idle engine: %d", n)
	}
	g.Hold()
	f := lock.NewMutex(eng, lockRoot(t)+"/L").Acquire(ctx)
	eventually(t, "a request in flight", func() bool { return eng.InFlight() > 0 })
	g.Release()
	l, err := f.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no request in flight", func() bool { return eng.InFlight() == 0 })
}

package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnstile-go/turnstile/election"
	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/metrics"
	"github.com/turnstile-go/turnstile/queue"
)

// observerFamilies are the metrics fed by the observer whose every sample
// expectExactly checks.
var observerFamilies = []string{
	"turnstile_acquisitions_total", "turnstile_acquisitions_pending",
	"turnstile_election_candidates", "turnstile_elections_led",
	"turnstile_leases_held", "turnstile_leases_ended_total",
	"turnstile_acquire_duration_seconds_count", "turnstile_hold_duration_seconds_count",
}

// expectExactly demands that the observer's metrics come to read want:
// every sample named there has its value, and every other sample of those
// families reads 0 (so a stray label, recipe="other" say, or an observer
// counted as a cancelled acquisition, fails the test).
func expectExactly(t *testing.T, reg prometheus.Gatherer, want map[string]float64) {
	t.Helper()
	var last string
	wait.Until(t, "the metrics read exactly as expected", func() bool {
		got := scrape(t, reg)
		var wrong []string
		for k, v := range want {
			if got[k] != v {
				wrong = append(wrong, fmt.Sprintf("%s = %v, want %v", k, got[k], v))
			}
		}
		for k, v := range got {
			if _, ok := want[k]; ok || v == 0 {
				continue
			}
			for _, f := range observerFamilies {
				if k == f || strings.HasPrefix(k, f+"{") {
					wrong = append(wrong, fmt.Sprintf("%s = %v, want 0", k, v))
				}
			}
		}
		sort.Strings(wrong)
		if s := strings.Join(wrong, "\n  "); s != last && s != "" {
			t.Logf("not yet:\n  %s", s)
			last = s
		}
		return len(wrong) == 0
	})
}

// reports tees the engine's reports to the collector and keeps those of
// election observers, so a test can wait for one to end.
type reports struct {
	c         *metrics.Collector
	mu        sync.Mutex
	observers map[uint64]bool // observer contenders, true once ended
}

func (r *reports) observe(rep events.Report) {
	r.c.Observe(rep)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case rep.Kind == events.Acquiring && rep.NodeKind == queue.KindObserver:
		r.observers[rep.ID] = false
	case rep.Kind == events.Failed || rep.Kind == events.Cancelled:
		if _, ok := r.observers[rep.ID]; ok {
			r.observers[rep.ID] = true
		}
	}
}

// observersEnded reports whether n observers were seen and all have ended.
func (r *reports) observersEnded(n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.observers) != n {
		return false
	}
	for _, ended := range r.observers {
		if !ended {
			return false
		}
	}
	return true
}

// A known workload of every recipe, scraped: Mutex, ReentrantMutex (its
// re-entry costs no acquisition), RWMutex read and write, Semaphore (its
// lease and the mutex it takes to get one), a TryAcquire that would block,
// an election with a leader, a standby candidate and an observer. Each
// counts under its recipe; the standby stands in election_candidates, not
// in acquisitions_pending; the observer counts nowhere; the session's state
// reads connected, then closed.
func TestEveryRecipe(t *testing.T) {
	ctx := testCtx(t)
	p := lockPath(t)
	c := metrics.New()
	rec := &reports{c: c, observers: make(map[uint64]bool)}
	eng := startEngine(t, engine.Config{Observer: rec.observe})
	c.Attach(eng)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	release := func(l *lock.Lease) {
		t.Helper()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lockAndRelease := func(a lock.Acquirer) {
		t.Helper()
		l, err := a.Acquire(ctx).Wait(ctx)
		if err != nil {
			t.Fatalf("%s: %v", a.Path(), err)
		}
		release(l)
	}

	// Locks: one grant each; the semaphore's adds one of its mutex.
	lockAndRelease(lock.NewMutex(eng, p+"/mutex"))
	re := lock.NewReentrantMutex(eng, p+"/reentrant")
	for range 2 {
		if _, err := re.Lock(ctx, "me"); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := re.Release(ctx, "me"); err != nil {
			t.Fatal(err)
		}
	}
	rw := lock.NewRWMutex(eng, p+"/rw")
	lockAndRelease(rw.Reader())
	lockAndRelease(rw.Writer())
	sem, err := lock.NewSemaphore(eng, p+"/sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	lockAndRelease(sem)

	// A try that finds the lock taken.
	m := lock.NewMutex(eng, p+"/try")
	held, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryAcquire(ctx); !errors.Is(err, engine.ErrWouldBlock) {
		t.Fatalf("TryAcquire of a held mutex: %v, want ErrWouldBlock", err)
	}
	release(held)

	locks := map[string]float64{
		// The mutex, the reentrant one (once), the semaphore's guard, the
		// try's holder.
		`turnstile_acquisitions_total{outcome="granted",recipe="mutex"}`:     4,
		`turnstile_acquisitions_total{outcome="granted",recipe="read"}`:      1,
		`turnstile_acquisitions_total{outcome="granted",recipe="write"}`:     1,
		`turnstile_acquisitions_total{outcome="granted",recipe="semaphore"}`: 1,
		`turnstile_acquisitions_total{outcome="would_block",recipe="mutex"}`: 1,
	}
	for recipe, n := range map[string]float64{"mutex": 4, "read": 1, "write": 1, "semaphore": 1} {
		locks[`turnstile_acquire_duration_seconds_count{recipe="`+recipe+`"}`] = n
		locks[`turnstile_hold_duration_seconds_count{recipe="`+recipe+`"}`] = n
		locks[`turnstile_leases_ended_total{how="released",recipe="`+recipe+`"}`] = n
	}
	expectExactly(t, reg, locks)

	// An election: an observer, a leader, a standby.
	elPath := p + "/election"
	el := election.New(eng, elPath)
	octx, stopObserving := context.WithCancel(ctx)
	leaders := el.Observe(octx)
	leader, err := el.Campaign(ctx, []byte("first")).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	standby := el.Campaign(ctx, []byte("second"))
	if l := <-leaders; string(l.Value) != "first" {
		t.Fatalf("observed leader %q, want first", l.Value)
	}
	wait.Until(t, "the standby's node made", func() bool {
		ps, err := lock.Participants(ctx, eng, elPath)
		return err == nil && len(ps) == 3 // leader, standby, observer
	})
	withLeader := func(extra map[string]float64) map[string]float64 {
		want := make(map[string]float64)
		for k, v := range locks {
			want[k] = v
		}
		for k, v := range extra {
			want[k] = v
		}
		return want
	}
	expectExactly(t, reg, withLeader(map[string]float64{
		`turnstile_acquisitions_total{outcome="granted",recipe="election"}`: 1,
		`turnstile_acquire_duration_seconds_count{recipe="election"}`:       1,
		`turnstile_leases_held{recipe="election"}`:                          1,
		`turnstile_election_candidates`:                                     1,
		`turnstile_elections_led`:                                           1,
	}))

	// The leader resigns: the standby leads; then it resigns too.
	if err := leader.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := standby.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for l := range leaders {
		if string(l.Value) == "second" {
			break
		}
	}
	expectExactly(t, reg, withLeader(map[string]float64{
		`turnstile_acquisitions_total{outcome="granted",recipe="election"}`: 2,
		`turnstile_acquire_duration_seconds_count{recipe="election"}`:       2,
		`turnstile_hold_duration_seconds_count{recipe="election"}`:          1,
		`turnstile_leases_ended_total{how="released",recipe="election"}`:    1,
		`turnstile_leases_held{recipe="election"}`:                          1,
		`turnstile_election_candidates`:                                     0,
		`turnstile_elections_led`:                                           1,
	}))
	if err := next.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	stopObserving()
	wait.Until(t, "the observer's contender ended", func() bool { return rec.observersEnded(1) })
	expectExactly(t, reg, withLeader(map[string]float64{
		`turnstile_acquisitions_total{outcome="granted",recipe="election"}`: 2,
		`turnstile_acquire_duration_seconds_count{recipe="election"}`:       2,
		`turnstile_hold_duration_seconds_count{recipe="election"}`:          2,
		`turnstile_leases_ended_total{how="released",recipe="election"}`:    2,
	}))

	got := scrape(t, reg)
	for _, st := range []string{"connected", "suspended", "lapsed", "expired", "closed"} {
		key := `turnstile_session_state{state="` + st + `"}`
		want := 0.0
		if st == "connected" {
			want = 1
		}
		if v, ok := got[key]; !ok || v != want {
			t.Errorf("%s = %v (exported: %v), want %v", key, v, ok, want)
		}
	}
	eng.Close()
	if got := scrape(t, reg); got[`turnstile_session_state{state="closed"}`] != 1 || got[`turnstile_session_state{state="connected"}`] != 0 {
		t.Errorf("after Close: session_state closed %v, connected %v; want 1, 0",
			got[`turnstile_session_state{state="closed"}`], got[`turnstile_session_state{state="connected"}`])
	}
}

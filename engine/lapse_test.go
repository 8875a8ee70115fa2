package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/turnstiletest"
)

// warnings records the messages logged at Warn and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// A lapse of trust is not an expiry: cut off for longer than the engine
// trusts the session but healed before the server expires it, the engine
// reports StateLapsed, once, never StateExpired, logs one warning, counts
// one untrusted session and no expiry, and goes on under the same
// session. The lease held then is lost with ErrLost, not
// ErrSessionExpired, and its holder keeps the lost margin it was promised
// to stop in: another client waiting for the lock is granted no sooner
// than that margin after Lost() closed, though the session answered again
// long before.
func TestLapseIsNotExpiry(t *testing.T) { bothLapses(t, lapseNotExpiry) }

// lapseRun is a lapse test given its engine's servers (nil: the shared
// one), the dialer it must use, and the fault that starts the lapse and
// the heal that ends it.
type lapseRun func(t *testing.T, servers []string, dial func(network, address string, timeout time.Duration) (net.Conn, error), cut, heal func())

// bothLapses runs run through the two lapses a server can cause: its
// connections cut, and the shared server's; its answers silenced, on a
// server of the test's own.
func bothLapses(t *testing.T, run lapseRun) {
	t.Run("cut", func(t *testing.T) {
		var p netfault.Partition
		run(t, nil, p.Dial, p.Cut, p.Heal)
	})
	t.Run("silent", func(t *testing.T) {
		zk := turnstiletest.Start(t, 1)
		p := zk.NewPartition()
		run(t, zk.Servers, p.Dial, p.Silence, p.Heal)
	})
}

func lapseNotExpiry(t *testing.T, servers []string, dial func(network, address string, timeout time.Duration) (net.Conn, error), cut, heal func()) {
	var logged warnings
	// Trust lapses 3 s after the last answer; the server expires the
	// session 8 s after it: the heal, and the reconnection, fall in
	// between, with 5 s to spare.
	eng := startEngine(t, engine.Config{Servers: servers, SessionTimeout: 8 * time.Second, LostMargin: 5 * time.Second,
		Dialer: dial, Logger: slog.New(&logged)})
	other := startEngine(t, engine.Config{Servers: servers})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := testRoot(t) + "/lapse"
	l, err := lock.NewMutex(eng, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := eng.SessionID()
	next := lock.NewMutex(other, path).Acquire(ctx) // queued behind l's node, which only a delete or the expiry removes

	stop := followStates(eng)
	defer stop()

	cut()
	select {
	case <-l.Lost():
	case <-ctx.Done():
		t.Fatal("the lease was never lost")
	}
	lostAt := time.Now()
	margin := eng.LostMargin()
	heal()
	if err := l.Err(); !errors.Is(err, engine.ErrLost) || errors.Is(err, engine.ErrSessionExpired) {
		t.Errorf("lease lost to a lapse: Err %v, want ErrLost without ErrSessionExpired", err)
	}
	granted, err := next.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after := time.Since(lostAt); after < margin {
		t.Errorf("the other engine was granted %v after Lost() closed, within the lost margin %v", after, margin)
	}
	if err := granted.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := lock.NewMutex(eng, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := eng.SessionID(); got != id {
		t.Fatalf("session %#x after the heal, was %#x: the server expired it, and the test shows nothing", got, id)
	}
	states := stop()
	if slices.Contains(states, engine.StateExpired) {
		t.Errorf("states %v: expired, though the server never expired the session", states)
	}
	if lapses := count(states, engine.StateLapsed); lapses != 1 {
		t.Errorf("states %v: %d lapses, want 1", states, lapses)
	}
	if s := eng.Sessions(); s.Expirations != 0 || s.Untrusted != 1 {
		t.Errorf("Sessions %+v: want 0 expirations, 1 untrusted", s)
	}
	if w := logged.list(); len(w) != 1 {
		t.Errorf("warnings %q, want one, of the lapse", w)
	}
}

// An expiry the server reports is reported once, as an expiry: the engine
// goes to StateExpired, never StateLapsed, logs one warning, counts one
// expiry and no lapse, and the lease is lost with ErrSessionExpired.
func TestExpiryReportedOnce(t *testing.T) {
	zk := turnstiletest.Start(t, 1)
	var logged warnings
	eng := startEngine(t, engine.Config{Servers: zk.Servers, Dialer: zk.Dial, Logger: slog.New(&logged)})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := lock.NewMutex(eng, "/expiry").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := eng.SessionID()
	stop := followStates(eng)
	if err := zk.ExpireSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	<-l.Lost()
	if err := l.Err(); !errors.Is(err, engine.ErrSessionExpired) || !errors.Is(err, engine.ErrLost) {
		t.Errorf("lease lost to an expiry: Err %v", err)
	}
	again, err := lock.NewMutex(eng, "/expiry").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Release(ctx); err != nil {
		t.Fatal(err)
	}
	seen := stop()
	if slices.Contains(seen, engine.StateLapsed) || count(seen, engine.StateExpired) != 1 {
		t.Errorf("states %v: want expired once, never lapsed", seen)
	}
	if s := eng.Sessions(); s.Expirations != 1 || s.Untrusted != 0 {
		t.Errorf("Sessions %+v: want 1 expiration, 0 untrusted", s)
	}
	if w := logged.list(); len(w) != 1 {
		t.Errorf("warnings %q, want one, of the expiry", w)
	}
}

// followStates records the states eng reports until stop, which returns
// them.
func followStates(eng *engine.Engine) (stop func() []engine.State) {
	var (
		mu   sync.Mutex
		seen []engine.State
	)
	followed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(followed)
		for s := range eng.StateChanges(ctx) {
			mu.Lock()
			seen = append(seen, s)
			mu.Unlock()
		}
	}()
	return func() []engine.State {
		cancel()
		<-followed
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

func count(states []engine.State, s engine.State) int {
	n := 0
	for _, x := range states {
		if x == s {
			n++
		}
	}
	return n
}

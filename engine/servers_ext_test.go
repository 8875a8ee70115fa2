package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
)

// On a standalone server, the engine learns that its server is its own
// leader, so that every answer counts, as before the engine knew roles:
// the single-server case keeps its anchor and never renews its handshake.
func TestStandaloneServerCountsAsLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for !e.OnLeader() {
		select {
		case <-ctx.Done():
			t.Fatal("the standalone server never became known as the leader")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Start reads the server's tickTime and warns when the margin does not
// exceed it: a leader cut off may answer for about a tick after the new
// leader started counting. The shared server ticks every 250 ms; a 1 s
// session's default margin is 200 ms, a 10 s session's 2 s.
func TestStartWarnsOfAMarginWithinATick(t *testing.T) {
	for _, c := range []struct {
		session time.Duration
		warn    bool
	}{{time.Second, true}, {10 * time.Second, false}} {
		var logs recordedLogs
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		e, err := engine.Start(ctx, engine.Config{Servers: zkServers(), SessionTimeout: c.session,
			Logger: slog.New(&logs)})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
		if got := logs.has(slog.LevelWarn, "tickTime"); got != c.warn {
			t.Errorf("session %v: warned of the tickTime %v, want %v; logs: %q", c.session, got, c.warn, logs.all())
		}
	}
}

// recordedLogs is a slog handler that keeps every record's level and
// message.
type recordedLogs struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *recordedLogs) Enabled(context.Context, slog.Level) bool { return true }
func (r *recordedLogs) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}
func (r *recordedLogs) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recordedLogs) WithGroup(string) slog.Handler      { return r }

func (r *recordedLogs) has(level slog.Level, word string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rec := range r.recs {
		if rec.Level == level && strings.Contains(rec.Message, word) {
			return true
		}
	}
	return false
}

func (r *recordedLogs) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, rec := range r.recs {
		s = append(s, rec.Level.String()+" "+rec.Message)
	}
	return s
}

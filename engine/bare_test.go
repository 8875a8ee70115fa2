package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/queue"
)

// bareCore is an engine's core without a runtime: pure tests and
// benchmarks hand it replies directly. Its in-flight bound is zero, so
// nothing it decides to send is ever sent; settle carries out the rest.
func bareCore(log *slog.Logger) *core {
	c := newCore(Config{Logger: log}, nil, &counters{}, &gauges{})
	c.newID = queue.NewID
	c.newLease = func(id uint64, path, node string, token int64) *Lease {
		return &Lease{id: id, path: path, node: node, token: token}
	}
	return c
}

// settle resolves the futures the core decided to resolve, as the runtime
// would, and drops the rest of what it decided.
func (c *core) settle() {
	e := &Engine{}
	for _, n := range c.ready().Notices {
		e.notice(n)
	}
}

// records is a slog.Handler that keeps every record.
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, rec)
	return nil
}

// Each listing of a wrapped path fails its contenders; the engine's logger
// hears of the wrap once.
func TestWrappedListingLoggedOnce(t *testing.T) {
	var logs records
	c := bareCore(slog.New(&logs))
	const path = "/locks/a"
	for round := range 3 {
		name := node(round+1, -2147483648+round)
		en := &entry{id: uint64(round + 1), acquired: newFuture[*Lease](),
			c: *newContender(path, queue.MutexPrefix, seqDecide, queue.NewID)}
		en.c.setNode(name)
		en.c.phase = phaseListing
		c.contenders[en.id] = en
		c.listings[path] = &listing{current: []uint64{en.id}}
		c.listed(events.OpDone{Op: events.OpList, Path: path, Children: []string{other(2147483647), name}, Pzxid: 1}, input{})
		c.settle()
		if _, done, err := en.acquired.Result(); !done || !errors.Is(err, ErrSequenceWrapped) {
			t.Fatalf("round %d: acquisition resolved %v with %v, want ErrSequenceWrapped", round, done, err)
		}
	}
	var wraps int
	for _, rec := range logs.list {
		if rec.Level == slog.LevelError {
			wraps++
		}
	}
	if wraps != 1 {
		t.Fatalf("%d error logs for three listings of one wrapped path, want 1: %v", wraps, logs.list)
	}
}

package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"golang.org/x/sync/semaphore"

	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/queue"
)

// bareEngine is an engine's loop state without a session: pure tests and
// benchmarks hand it replies directly. Nothing it queues is ever sent.
func bareEngine(log *slog.Logger) *Engine {
	return &Engine{log: log, inbox: events.NewInbox(), sem: semaphore.NewWeighted(0),
		contenders: map[uint64]*entry{}, watchers: map[string][]uint64{}, listings: map[string]*listing{},
		nodes: map[string]uint64{}, localWatch: map[string][]uint64{}, borrowed: map[string]int{}}
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
	e := bareEngine(slog.New(&logs))
	const path = "/locks/a"
	for round := range 3 {
		name := node(round+1, -2147483648+round)
		en := &entry{id: uint64(round + 1), acquired: newFuture[*Lease](),
			c: *newContender(path, queue.MutexPrefix, seqDecide, queue.NewID)}
		en.c.setNode(name)
		en.c.phase = phaseListing
		e.contenders[en.id] = en
		e.listings[path] = &listing{current: []uint64{en.id}}
		e.listed(events.OpDone{Op: events.OpList, Path: path, Children: []string{other(2147483647), name}, Pzxid: 1}, input{})
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

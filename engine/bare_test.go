package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// bareCore is an engine's core without a runtime: pure tests and
// benchmarks hand it replies directly. Its in-flight bound is zero, so
// nothing it decides to send is ever sent; settle carries out the rest.
func bareCore(log *slog.Logger) *core {
	c := newCore(Config{Logger: log}, nil, &counters{}, &gauges{})
	c.newID = nodename.NewID
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

// listingEntry is a mutex contender of path whose create made node name:
// its machine, stepped through its start and the create's reply, waits
// for a listing.
func listingEntry(id uint64, path, name string) *entry {
	en := &entry{id: id, acquired: newFuture[*Lease](), c: contender.New(contender.Config{
		LockPath: path, Prefix: nodename.Mutex, Decide: contender.Decider(mutexAtHead),
		NewID: nodename.NewID, Connected: true,
	})}
	en.c.Step(contender.Input{Kind: contender.Start})
	en.c.Step(contender.Input{Kind: contender.Created, Name: name})
	return en
}

// mutexNode is the name of a mutex node of protected id with sequence
// number seq, as the server formats it (a negative seq: its counter wrapped).
func mutexNode(id string, seq int64) string {
	return nodename.Protected(id, queue.KindMutex) + nodename.FormatSeq(seq)
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
		name := mutexNode(nodename.NewID(), -2147483648+int64(round))
		en := listingEntry(uint64(round+1), path, name)
		c.contenders[en.id] = en
		c.listings[path] = &listing{current: []uint64{en.id}}
		children := []string{mutexNode(nodename.NewID(), 2147483647), name}
		c.listed(input.OpDone{Op: input.OpList, Path: path, Children: children, Pzxid: 1}, contender.Input{})
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

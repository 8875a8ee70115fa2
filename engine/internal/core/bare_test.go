package core

import (
	"errors"
	"testing"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// bareCore is a core without a runtime: pure tests and benchmarks hand it
// replies directly and read what it decided. Its in-flight bound is zero,
// so nothing it decides to send is ever sent.
func bareCore() *Core {
	return New(Config{NewID: nodename.NewID}, nil)
}

// listingEntry is a mutex contender of path whose create made node name:
// its machine, stepped through its start and the create's reply, waits
// for a listing.
func listingEntry(id uint64, path, name string) *entry {
	en := &entry{id: id, req: &Acquire{ID: id, Path: path}, c: contender.New(contender.Config{
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

// Each listing of a wrapped path fails its contenders; the engine's logger
// hears of the wrap once.
func TestWrappedListingLoggedOnce(t *testing.T) {
	c := bareCore()
	const path = "/locks/a"
	var wraps []Log
	for round := range 3 {
		name := mutexNode(nodename.NewID(), -2147483648+int64(round))
		en := listingEntry(uint64(round+1), path, name)
		c.contenders[en.id] = en
		c.listings[path] = &listing{current: []uint64{en.id}}
		children := []string{mutexNode(nodename.NewID(), 2147483647), name}
		c.listed(input.OpDone{Op: input.OpList, Path: path, Children: children, Pzxid: 1}, contender.Input{})
		rd := c.Ready()
		var failed error
		for _, n := range rd.Notices {
			if n.Kind == NoteAcquired && n.ID == en.id {
				failed = n.Err
			}
		}
		if !errors.Is(failed, contender.ErrSequenceWrapped) {
			t.Fatalf("round %d: acquisition resolved with %v, want contender.ErrSequenceWrapped", round, failed)
		}
		for _, r := range rd.Logs {
			if r.Level == LevelError {
				wraps = append(wraps, r)
			}
		}
	}
	if len(wraps) != 1 {
		t.Fatalf("%d error logs for three listings of one wrapped path, want 1: %v", len(wraps), wraps)
	}
}

package core

import (
	"fmt"
	"testing"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// Group commit's choice of when a write request goes, with the counts a
// load takes (the scripts in testdata show a light load).

func newTestCommit(maxInFlight int) *groupCommit {
	return &groupCommit{maxInFlight: maxInFlight, aclBytes: func(string) int { return 0 }}
}

// deletes queues n deletes of nodes on paths of their own.
func (g *groupCommit) queueDeletes(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		g.submit(&Ready{}, Op{Kind: input.OpDelete, Path: fmt.Sprintf("/d%d/_c_x-lock-%010d", len(g.writes), i)})
	}
}

// sent flushes and returns the sizes of the write requests sent, in order.
func (g *groupCommit) sent() []int {
	var rd Ready
	g.flush(&rd)
	var sizes []int
	for _, o := range rd.Requests {
		if !o.Write {
			continue
		}
		sizes = append(sizes, max(len(o.Batch), 1))
	}
	return sizes
}

func sameSizes(a, b []int) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// fillSlots sends maxWrites requests of ops deletes each, every one at
// once, as an engine with its write slots free does.
func (g *groupCommit) fillSlots(t *testing.T, ops int) {
	t.Helper()
	for range maxWrites {
		g.queueDeletes(t, ops)
		if got := g.sent(); !sameSizes(got, []int{ops}) {
			t.Fatalf("an engine with a slot free sent %v, want one request of %d", got, ops)
		}
	}
}

// Under a load (two write requests in flight carrying lightOps or more),
// a few writes wait for a slot and then go as one multi; a batch of
// extraBatch goes at once, past the two.
func TestGroupCommitUnderLoad(t *testing.T) {
	g := newTestCommit(256)
	g.fillSlots(t, 10)
	if g.writing != 2 || g.writeOps != 20 {
		t.Fatalf("in flight: %d requests of %d ops, want 2 of 20", g.writing, g.writeOps)
	}
	g.queueDeletes(t, extraBatch-1)
	if got := g.sent(); len(got) != 0 {
		t.Fatalf("%d writes beside two requests of 20 in flight: sent %v, want them to wait for a slot", extraBatch-1, got)
	}
	g.queueDeletes(t, 1)
	if got := g.sent(); !sameSizes(got, []int{extraBatch}) {
		t.Fatalf("%d writes beside two requests in flight: sent %v, want one request of them at once", extraBatch, got)
	}
	g.queueDeletes(t, 3)
	if got := g.sent(); len(got) != 0 {
		t.Fatalf("3 writes beside three requests in flight: sent %v, want them to wait", got)
	}
	g.done(true, extraBatch)
	if got := g.sent(); len(got) != 0 {
		t.Fatalf("3 writes beside two requests of 10 in flight: sent %v, want them to wait", got)
	}
	g.queueDeletes(t, 2)
	g.done(true, 10)
	if got := g.sent(); !sameSizes(got, []int{5}) {
		t.Fatalf("a slot freed with 5 writes waiting: sent %v, want one request of the 5", got)
	}
}

// At a light load (fewer than lightOps in flight in all) a write goes at
// once: waiting for a slot would cost it the round trip of a request
// already in flight, and save the server little.
func TestGroupCommitLightLoad(t *testing.T) {
	g := newTestCommit(256)
	g.fillSlots(t, 1)
	g.queueDeletes(t, 1)
	if got := g.sent(); !sameSizes(got, []int{1}) {
		t.Fatalf("a write beside two requests of one op in flight: sent %v, want it at once", got)
	}
	g.queueDeletes(t, 3)
	if got := g.sent(); !sameSizes(got, []int{3}) {
		t.Fatalf("3 writes beside three requests of one op in flight: sent %v, want them at once, together", got)
	}
}

// A backlog (the server slow to answer two full requests) leaves at once
// in full requests, within MaxInFlight, rather than two a round trip; its
// rest, fewer than extraBatch, waits for a slot.
func TestGroupCommitBacklog(t *testing.T) {
	g := newTestCommit(256)
	g.fillSlots(t, maxBatch)
	g.queueDeletes(t, 3*maxBatch+extraBatch-1)
	if got := g.sent(); !sameSizes(got, []int{maxBatch, maxBatch, maxBatch}) {
		t.Fatalf("a backlog of %d beside two full requests in flight: sent %v, want three full requests", 3*maxBatch+extraBatch-1, got)
	}
	if len(g.writes) != extraBatch-1 {
		t.Fatalf("%d writes left waiting, want %d", len(g.writes), extraBatch-1)
	}

	// Within MaxInFlight: past it, the writes wait with the writes (where
	// they may still grow into a batch), not in the backlog.
	g = newTestCommit(3)
	for range maxWrites {
		g.queueDeletes(t, maxBatch)
		g.sent()
	}
	g.queueDeletes(t, 2*maxBatch)
	if got := g.sent(); !sameSizes(got, []int{maxBatch}) {
		t.Fatalf("a backlog of two full batches, one request left within MaxInFlight: sent %v, want one full request", got)
	}
	if len(g.writes) != maxBatch || len(g.backlog) != 0 {
		t.Fatalf("%d writes and %d requests held back, want %d writes and no request", len(g.writes), len(g.backlog), maxBatch)
	}
}

// Past the two write requests, creates keep the order of their lock
// path's queue as below them: a create waits while one on its path is in
// flight in another request, however many wait with it.
func TestGroupCommitExtraKeepsPathOrder(t *testing.T) {
	g := newTestCommit(256)
	create := func(path string, i int) Op {
		return Op{Kind: input.OpCreate, ID: uint64(i + 1), Path: fmt.Sprintf("%s/_c_%d-lock-", path, i)}
	}
	g.submit(&Ready{}, create("/p", 0))
	if got := g.sent(); !sameSizes(got, []int{1}) {
		t.Fatalf("sent %v, want the create", got)
	}
	g.queueDeletes(t, lightOps)
	if got := g.sent(); !sameSizes(got, []int{lightOps}) {
		t.Fatalf("sent %v, want the deletes together", got)
	}
	for i := 1; i <= maxBatch; i++ {
		g.submit(&Ready{}, create("/p", i))
	}
	if got := g.sent(); len(got) != 0 {
		t.Fatalf("%d creates on a path with a create in flight: sent %v, want them to wait", maxBatch, got)
	}
	g.createReturned("/p")
	g.done(true, 1)
	var rd Ready
	g.flush(&rd)
	if len(rd.Requests) != 1 || len(rd.Requests[0].Batch) != maxBatch {
		t.Fatalf("the path's create answered: sent %v, want one multi of its %d creates", rd.Requests, maxBatch)
	}
	for i, o := range rd.Requests[0].Batch {
		if o.ID != uint64(i+2) {
			t.Fatalf("the multi's op %d is contender %d's create, want %d's: the path's queue reordered", i, o.ID, i+2)
		}
	}
}

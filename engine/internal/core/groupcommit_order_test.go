package core

import (
	"testing"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// A write request held back by the in-flight bound (MaxInFlight reached
// by other requests) is in flight as far as its lock path's order goes:
// once the bound frees it, it runs beside any request sent after it, and
// the two reach the server in either order. So a create on the same path
// waits until the held one's create is answered, not only until it is
// sent; creates on one path are the lock's queue.
func TestGroupCommitBacklogKeepsPathOrder(t *testing.T) {
	g := newTestCommit(1)
	var rd Ready
	g.submit(&rd, Op{Kind: input.OpList, Path: "/q"}) // fills the bound
	if len(rd.Requests) != 1 {
		t.Fatalf("sent %v, want the listing", rd.Requests)
	}
	create := func(id uint64) Op { return Op{Kind: input.OpCreate, ID: id, Path: "/p/_c_x-lock-"} }
	g.submit(&Ready{}, create(1))
	if got := g.sent(); len(got) != 0 || len(g.backlog) != 1 {
		t.Fatalf("a create beside a full bound: sent %v, %d held back; want it held back", got, len(g.backlog))
	}
	g.submit(&Ready{}, create(2))
	if got := g.sent(); len(got) != 0 || len(g.writes) != 1 {
		t.Fatalf("a second create on the path: sent %v, %d waiting; want it waiting", got, len(g.writes))
	}
	g.done(false, 0) // the listing: the bound lets the held create go
	rd = Ready{}
	g.flush(&rd)
	if len(rd.Requests) != 1 || rd.Requests[0].ID != 1 {
		t.Fatalf("the bound freed: sent %v, want the first create alone", rd.Requests)
	}
	rd = Ready{}
	g.flush(&rd)
	if len(rd.Requests) != 0 {
		t.Fatalf("the first create sent, not answered: sent %v, want the second create to wait", rd.Requests)
	}
	g.createReturned("/p")
	g.done(true, 1)
	rd = Ready{}
	g.flush(&rd)
	if len(rd.Requests) != 1 || rd.Requests[0].ID != 2 {
		t.Fatalf("the first create answered: sent %v, want the second create", rd.Requests)
	}
}

package engine

import (
	"context"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/queue"
)

// watchConn answers the cohort's listing with a watch: the node's own name
// and a channel the test fires. Nothing else of the client is reached.
type watchConn struct {
	zkConn
	self string
	ch   chan zk.Event
}

func (c *watchConn) ChildrenW(string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return []string{c.self}, &zk.Stat{}, c.ch, nil
}

// noTimer is the linger's timer, never fired: the test decides the wake.
type noTimer struct{}

func (noTimer) Stop() bool               { return true }
func (noTimer) Reset(time.Duration) bool { return true }

// A lingering node goes back once the cohort's watch fires, even when
// the wake runs between go-zookeeper's send of the event and its close of
// the channel (notifyWatches sends, then closes): the goroutine that took
// the event steps the wake, and a poll of the channel there finds it
// empty and open. The node must go back all the same, or another client
// waits for it until the linger's end (an hour here).
func TestCohortLingerWakesOnTheEventBeforeTheClose(t *testing.T) {
	e := cohortEngineWith(t, CohortConfig{Linger: time.Hour, MaxHold: time.Hour})
	conn := &watchConn{self: "_c_x-lock-0000000001", ch: make(chan zk.Event, 1)}
	e.conn = conn
	e.rt.afterFunc = func(time.Duration, func()) timer { return noTimer{} }
	var wg sync.WaitGroup
	e.rt.goroutine = func(f func()) { wg.Go(f) }

	f := e.Acquire(context.Background(), Request{Path: "/p", Kind: queue.KindMutex, Cohort: true, Decide: holdsAlways})
	acquires, _ := commands(e)
	if len(acquires) != 1 {
		t.Fatalf("%d acquisitions, want 1", len(acquires))
	}
	if l := grantNode(t, e, acquires[0], 1); path.Base(l.node) != conn.self {
		t.Fatalf("node %s, want %s", l.node, conn.self)
	}
	if err := resolved(t, f).Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, releases := commands(e); len(releases) != 0 {
		t.Fatalf("%d releases at the last local release, want the node lingering", len(releases))
	}
	// The listing answered (the goroutine then waits on the channel), then
	// another client's node: go-zookeeper's send, its close not yet done.
	wait.Until(t, "the listing answered", func() bool { return e.CohortListed("/p") })
	conn.ch <- zk.Event{Type: zk.EventNodeChildrenChanged, State: zk.StateSyncConnected, Path: "/p"}
	wg.Wait() // the watch's goroutine took the event and stepped the wake
	_, releases := commands(e)
	close(conn.ch)
	if len(releases) != 1 {
		t.Fatalf("%d releases after the watch fired, want the lingering node given back", len(releases))
	}
	if s := e.CohortStats(); s.Yielded != 1 {
		t.Fatalf("cohort stats %+v, want one node yielded", s)
	}
}

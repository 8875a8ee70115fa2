package engine

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/queue"
)

// watchConn answers the cohort's listing with a watch: the node's own name
// and a channel the test fires, and takes the node's delete. Nothing else
// of the client is reached.
type watchConn struct {
	zkConn
	self string
	ch   chan zk.Event

	mu      sync.Mutex
	deleted []string
}

func (c *watchConn) ChildrenW(string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	return []string{c.self}, &zk.Stat{}, c.ch, nil
}

// Delete notes the paths deleted, for the node given back at once.
func (c *watchConn) Delete(p string, _ int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deleted = append(c.deleted, p)
	return nil
}

// Set takes the lingering node's mark (Engine.markNode).
func (c *watchConn) Set(string, []byte, int32) (*zk.Stat, error) { return &zk.Stat{}, nil }

// noTimer is the linger's timer, never fired: the test decides the wake.
type noTimer struct{}

func (noTimer) Stop() bool               { return true }
func (noTimer) Reset(time.Duration) bool { return true }

// releasedToLinger is an engine with no loop, on conn, whose cohort on /p
// was granted a node (numbered 1) and released it once, so that the node
// lingers and its listing is asked; its timer never fires, and wg counts
// the engine's goroutines.
func releasedToLinger(t *testing.T, conn zkConn) (e *Engine, l *Lease, wg *sync.WaitGroup) {
	t.Helper()
	e = cohortEngineWith(t, CohortConfig{Linger: time.Hour, MaxHold: time.Hour})
	e.conn = conn
	e.rt.afterFunc = func(time.Duration, func()) timer { return noTimer{} }
	wg = new(sync.WaitGroup)
	e.rt.goroutine = func(f func()) { wg.Go(f) }

	f := e.Acquire(context.Background(), Request{Path: "/p", Kind: queue.KindMutex, Cohort: true, Decide: holdsAlways})
	acquires, _ := commands(e)
	if len(acquires) != 1 {
		t.Fatalf("%d acquisitions, want 1", len(acquires))
	}
	l = grantNode(t, e, acquires[0], 1)
	if err := resolved(t, f).Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, releases := commands(e); len(releases) != 0 {
		t.Fatalf("%d releases at the last local release, want the node lingering", len(releases))
	}
	return e, l, wg
}

// lingeringOnAWatch is releasedToLinger on a watchConn, once the listing
// is answered on the watch of conn's that the test fires.
func lingeringOnAWatch(t *testing.T) (e *Engine, conn *watchConn, l *Lease, wg *sync.WaitGroup) {
	conn = &watchConn{self: "_c_x-lock-0000000001", ch: make(chan zk.Event, 1)}
	if e, l, wg = releasedToLinger(t, conn); path.Base(l.node) != conn.self {
		t.Fatalf("node %s, want %s", l.node, conn.self)
	}
	wait.Until(t, "the listing answered", func() bool { return e.CohortListed("/p") })
	wg.Wait() // the listing's goroutine and the mark's: a test may swap conn
	return e, conn, l, wg
}

// notify hands e a notification as go-zookeeper does: the event callback
// first, on the receive goroutine, then the send to ch and its close.
func notify(e *Engine, ch chan zk.Event, ev zk.Event) {
	e.onZKEvent(ev)
	ch <- ev
	close(ch)
}

// A lingering node goes back from the client's event callback, as the
// notification is read: before the client hands it to the watch's
// channel, and with no goroutine waiting on that channel. The node must go
// back, or another client waits for it until the linger's end (an hour).
func TestCohortLingerWakesFromTheEventCallback(t *testing.T) {
	e, _, _, wg := lingeringOnAWatch(t)
	e.onZKEvent(zk.Event{Type: zk.EventNodeChildrenChanged, State: zk.StateSyncConnected, Path: "/p"})
	wg.Wait()
	if _, releases := commands(e); len(releases) != 1 {
		t.Fatalf("%d releases after the watch fired, want the lingering node given back", len(releases))
	}
	if s := e.CohortStats(); s.Yielded != 1 {
		t.Fatalf("cohort stats %+v, want one node yielded", s)
	}
}

// gatedConn holds the cohort's listing until the test opens the gate.
type gatedConn struct {
	*watchConn
	asked chan struct{} // closed once the listing is asked
	gate  chan struct{}
}

func (c *gatedConn) ChildrenW(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	close(c.asked)
	<-c.gate
	return c.watchConn.ChildrenW(p)
}

// A notification for the lock path that the client reads while the
// listing is in flight may be the one of its watch (the client adds the
// channel as it reads the reply, before the caller has it, and hands the
// notification to the callback before the channel): the wake, armed once
// the listing is taken, runs at once. Here the listing shows no other
// client and the channel is still empty when the listing is taken, so
// nothing else would send the node back before the linger's end.
func TestCohortLingerNotifiedWhileItsListingIsInFlight(t *testing.T) {
	conn := &gatedConn{watchConn: &watchConn{self: "_c_x-lock-0000000001", ch: make(chan zk.Event, 1)},
		asked: make(chan struct{}), gate: make(chan struct{})}
	e, _, wg := releasedToLinger(t, conn)
	// The callback runs; the listing's goroutine takes the reply and polls
	// the channel before the client sends to it.
	<-conn.asked
	ev := zk.Event{Type: zk.EventNodeChildrenChanged, State: zk.StateSyncConnected, Path: "/p"}
	e.onZKEvent(ev)
	close(conn.gate)
	wg.Wait()
	conn.ch <- ev
	close(conn.ch)
	if _, releases := commands(e); len(releases) != 1 {
		t.Fatalf("%d releases once the listing was taken, want the lingering node given back", len(releases))
	}
}

// A lingering node that another client's arrival sends back has its delete
// sent by the goroutine that saw the watch fire, after its release is
// queued for the loop, and not by the loop: here no loop runs at all, yet
// the delete leaves. The client waiting on the node waits for the delete
// and nothing else of the engine's (see core.Release's Sent); the release
// reaches the loop before the delete's reply, which says it was sent.
func TestCohortLingerSendsTheDeleteAtOnce(t *testing.T) {
	e, conn, l, wg := lingeringOnAWatch(t)
	notify(e, conn.ch, zk.Event{Type: zk.EventNodeChildrenChanged, State: zk.StateSyncConnected, Path: "/p"})
	wg.Wait()

	if len(conn.deleted) != 1 || conn.deleted[0] != l.node {
		t.Fatalf("deleted %q with no loop running, want the lingering node %s", conn.deleted, l.node)
	}
	// The notification is queued after the release, on the receive
	// goroutine, while the delete's goroutine runs: it may come before or
	// after the delete's outcome (TestCohortLingerNotificationLeavesTheWakeToTheDelete
	// holds the delete to see it in place).
	fired := fmt.Sprintf("watch fired %v /p", input.NodeChildrenChanged)
	got := drainInbox(e)
	if n := len(got); slices.Index(got, fired) < 1 {
		t.Fatalf("the loop's inbox holds\n%s\nwant the notification after the release", strings.Join(got, "\n"))
	} else if got = slices.DeleteFunc(got, func(s string) bool { return s == fired }); len(got) != n-1 {
		t.Fatalf("the notification queued %d times, want once", n-len(got))
	}
	want := []string{"release sent=true node=" + l.node, "delete " + l.node, "request done write=true ops=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("the loop's inbox holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// heldDeleteConn holds the lingering node's delete until the test lets it
// go.
type heldDeleteConn struct {
	*watchConn
	gate chan struct{}
}

func (c *heldDeleteConn) Delete(p string, v int32) error {
	<-c.gate
	return c.watchConn.Delete(p, v)
}

// The notification that sent a lingering node's delete at once is queued
// for the loop without waking it (the delete's reply does, and a turn now
// would take a CPU from the server and the waiting client); one that sent
// no delete wakes the loop as any other.
func TestCohortLingerNotificationLeavesTheWakeToTheDelete(t *testing.T) {
	e, conn, l, wg := lingeringOnAWatch(t)
	held := &heldDeleteConn{watchConn: conn, gate: make(chan struct{})}
	e.conn = held
	signalled := func() bool {
		select {
		case <-e.inbox.Ready():
			return true
		default:
			return false
		}
	}
	signalled() // whatever the set-up left

	e.onZKEvent(zk.Event{Type: zk.EventNodeChildrenChanged, State: zk.StateSyncConnected, Path: "/p"})
	if signalled() {
		t.Fatal("the loop was woken with the lingering node's delete in flight")
	}
	got := drainInbox(e)
	want := []string{"release sent=true node=" + l.node, fmt.Sprintf("watch fired %v /p", input.NodeChildrenChanged)}
	if !slices.Equal(got, want) {
		t.Fatalf("the loop's inbox holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	close(held.gate)
	wg.Wait()
	if !signalled() {
		t.Fatal("the delete's reply did not wake the loop")
	}

	e.onZKEvent(zk.Event{Type: zk.EventNodeChildrenChanged, State: zk.StateSyncConnected, Path: "/p"})
	if !signalled() {
		t.Fatal("a notification that sent no delete did not wake the loop")
	}
}

// drainInbox takes what the loop would, as lines: the releases, the
// notifications and the requests' outcomes.
func drainInbox(e *Engine) (got []string) {
	for _, ev := range e.inbox.Drain(nil) {
		switch ev := ev.(type) {
		case input.Command:
			if r, ok := ev.Payload.(*releaseCmd); ok {
				got = append(got, fmt.Sprintf("release sent=%v node=%s", r.req.Sent, r.lease.node))
			}
		case input.WatchFired:
			got = append(got, fmt.Sprintf("watch fired %v %s", ev.Type, ev.Path))
		case input.OpDone:
			got = append(got, fmt.Sprintf("%v %s", ev.Op, ev.Path))
		case input.RequestDone:
			got = append(got, fmt.Sprintf("request done write=%v ops=%d", ev.Write, ev.Ops))
		}
	}
	return got
}

package engine

import (
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/wait"
)

// yieldingConn answers the cohort's listing, once the test opens listed,
// with another client's node beside the cohort's own (so the lingering
// node goes back at once, its delete sent from the listing's goroutine),
// and holds that delete until the test opens deleted.
type yieldingConn struct {
	*watchConn
	listed, deleted chan struct{}
}

func (c *yieldingConn) ChildrenW(p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	<-c.listed
	return []string{c.self, "lock-0000000002"}, &zk.Stat{}, c.watchConn.ch, nil
}

func (c *yieldingConn) Delete(p string, v int32) error {
	<-c.deleted
	return c.watchConn.Delete(p, v)
}

// A notification that runs no lingering node's wake (here a contender's
// predecessor deleted, on another lock path) wakes the loop, even when a
// delete is sent at once on another goroutine while the callback runs:
// that goroutine's listing found another client at a lingering node. The
// callback may leave the loop unwoken only for a delete its own wakes
// sent; a delete of another goroutine's says nothing of whether this
// notification's reply will come, and the loop would hear of the
// predecessor's deletion only once some other event woke it.
func TestCohortLingerOtherNotificationWakesTheLoopWhileADeleteLeaves(t *testing.T) {
	conn := &yieldingConn{watchConn: &watchConn{self: "_c_x-lock-0000000001", ch: make(chan zk.Event, 1)},
		listed: make(chan struct{}), deleted: make(chan struct{})}
	e, _, wg := releasedToLinger(t, conn) // lingers; its listing is asked
	defer wg.Wait()
	defer close(conn.deleted)

	select { // whatever the set-up signalled
	case <-e.inbox.Ready():
	default:
	}

	// The callback runs for the predecessor's deletion and is held once
	// its wakes ran, after it read the count of deletes sent at once.
	held, resume := make(chan struct{}), make(chan struct{})
	e.wakesRan = func() { close(held); <-resume }
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.onZKEvent(zk.Event{Type: zk.EventNodeDeleted, State: zk.StateSyncConnected, Path: "/q/_c_z-lock-0000000007"})
	}()
	<-held
	// Meanwhile the lingering node's listing shows another client: its
	// delete leaves at once, from the listing's goroutine.
	close(conn.listed)
	wait.Until(t, "the lingering node's delete sent at once", func() bool { return e.count.atOnce.Load() == 1 })
	close(resume)
	<-done

	select {
	case <-e.inbox.Ready():
	default:
		t.Fatal("the predecessor's deletion was queued without waking the loop: another goroutine's delete sent at once meanwhile")
	}
}

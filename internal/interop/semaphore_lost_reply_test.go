package interop_test

import (
	"context"
	"encoding/binary"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/interop"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
)

// A turnstile semaphore acquirer whose guard is lost to the watchdog while
// its lease's create is lost with the connection, before the server
// applied it: once the session is back (it never expired), the recovery
// read finds no lease node and the engine makes it again, without the
// guard. Meanwhile the guard's node went, and a Curator acquirer queued
// behind it took the guard and made its lease node: the new lease node
// queues behind Curator's. It must be given up, and the attempt go back
// through the guard: Curator, admitting by count, waits for it, holding
// the guard, while turnstile, admitting by position, would wait for
// Curator's, for ever. Both must hold in turn, never together.
//
// The acquirer's connection is cut the moment it holds the guard, so its
// lease create fails unapplied; it is healed once the guard is lost (1 s
// after the server last answered; the session would expire after 20 s),
// with the replies to the new connection held after its handshake until
// Curator has made its lease node.
func TestTurnstileSemaphoreLapseWithALostLeaseCreateBesideCurator(t *testing.T) {
	cp := curator(t)
	ctx := testCtx(t)
	path := lockPath(t)
	guard, leases := path+"/locks", path+"/leases"
	w, err := interop.NewWitness(filepath.Join(t.TempDir(), "witness"))
	if err != nil {
		t.Fatal(err)
	}
	zc := inspect(t)
	var (
		p         netfault.Partition
		g         replyGate
		armed     atomic.Bool // the next connection holds replies after its handshake
		cut, lost sync.Once
		guardLost = make(chan struct{})
	)
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := p.Dial(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		gc := gatedConn{Conn: c, g: &g}
		if armed.CompareAndSwap(true, false) {
			gc.first = &handshake{}
		}
		return gc, nil
	}
	a := startEngine(t, engine.Config{SessionTimeout: 20 * time.Second, LostMargin: 19 * time.Second, Dialer: dial,
		Observer: func(r events.Report) {
			switch {
			case r.Kind == events.Granted && r.Path == guard:
				cut.Do(p.Cut)
			case r.Kind == events.Lost && r.Path == guard:
				lost.Do(func() { close(guardLost) })
			}
		}})
	t.Cleanup(g.release) // before a closes: a read held at the gate would keep it open
	b := turnstileEngine(t)
	const workerA, workerB = 1, 2 // witness files of this process

	lb, err := lock.NewSemaphoreMutex(b, path).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.EnterSemaphore(workerB, 1); err != nil {
		t.Fatal(err)
	}
	waiting := lock.NewSemaphoreMutex(a, path).Acquire(ctx)
	select {
	case <-guardLost:
	case <-ctx.Done():
		t.Fatal("a's guard was never lost")
	}
	peer, err := interop.StartCurator(ctx, cp, interop.PeerConfig{
		Connect: zookeeper(t), Path: path, Recipe: "semaphore", Leases: 1, Workers: 1, Iterations: 1,
		Hold: 100 * time.Millisecond, Witness: w.Path, Timeout: peerTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(peer.Kill)
	eventually(t, ctx, "Curator queues on the guard", func() bool { return len(owners(t, zc, guard)) == 2 })
	if n := len(owners(t, zc, leases)); n != 1 {
		t.Fatalf("%d lease nodes while a was cut off, want b's alone", n)
	}
	armed.Store(true)
	p.Heal()
	eventually(t, ctx, "Curator took the guard and made its lease node", func() bool {
		return othersLease(t, zc, leases, a, b)
	})
	g.release()
	t.Logf("guard owners %x, lease owners %x (a's session %x)", owners(t, zc, guard), owners(t, zc, leases), a.SessionID())
	if err := w.ExitSemaphore(workerB); err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}

	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	la, err := waiting.Wait(wctx)
	if err != nil {
		t.Fatalf("turnstile acquirer after its guard and its lease's create were lost, beside Curator: %v "+
			"(guard owners %x, lease owners %x)", err, owners(t, zc, guard), owners(t, zc, leases))
	}
	if err := w.EnterSemaphore(workerA, 1); err != nil {
		t.Error(err)
	}
	if err := w.ExitSemaphore(workerA); err != nil {
		t.Error(err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	results := waitAll(t, peer)
	checkAll(t, []*interop.Peer{peer}, results, 1)
	eventually(t, ctx, "no lease or guard node left", func() bool {
		return len(owners(t, zc, guard))+len(owners(t, zc, leases)) == 0
	})
}

// othersLease reports whether a lease node of a session of neither a nor
// b exists: the Curator acquirer's.
func othersLease(t *testing.T, zc *zk.Conn, leases string, a, b *engine.Engine) bool {
	for _, o := range owners(t, zc, leases) {
		if o != a.SessionID() && o != b.SessionID() {
			return true
		}
	}
	return false
}

// replyGate holds back what the server sends on the connections it
// wraps: requests go out, their replies wait until release (or until the
// connection is closed under them).
type replyGate struct {
	mu   sync.Mutex
	shut chan struct{} // nil while open
}

func (g *replyGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut == nil {
		g.shut = make(chan struct{})
	}
}

func (g *replyGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}

func (g *replyGate) wait() {
	g.mu.Lock()
	ch := g.shut
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

type gatedConn struct {
	net.Conn
	g *replyGate
	// first, when not nil, lets the connection's first reply through
	// (the handshake's), then holds the gate.
	first *handshake
}

// handshake is the progress of a connection's first reply: its length
// prefix, then what is left of it.
type handshake struct {
	head []byte
	left int
	done bool
}

func (c gatedConn) Read(b []byte) (int, error) {
	f := c.first
	if f == nil || f.done {
		c.g.wait()
		return c.Conn.Read(b)
	}
	if len(f.head) < 4 {
		b = b[:min(len(b), 4-len(f.head))]
	} else {
		b = b[:min(len(b), f.left)]
	}
	n, err := c.Conn.Read(b)
	if len(f.head) < 4 {
		f.head = append(f.head, b[:n]...)
		if len(f.head) == 4 {
			f.left = int(binary.BigEndian.Uint32(f.head))
		}
	} else {
		f.left -= n
	}
	if len(f.head) == 4 && f.left == 0 {
		f.done = true
		c.g.hold()
	}
	return n, err
}

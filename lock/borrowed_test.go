package lock_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/netfault"
	"github.com/turnstile-go/turnstile/lock"
)

// muting is a partition whose connections can also go mute: what the
// client writes is lost on the way, while the connection stays up.
type muting struct {
	netfault.Partition
	muted atomic.Bool
}

func (m *muting) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := m.Partition.Dial(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return mutedConn{Conn: c, muted: &m.muted}, nil
}

type mutedConn struct {
	net.Conn
	muted *atomic.Bool
}

func (c mutedConn) Write(p []byte) (int, error) {
	if c.muted.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// TestDowngradeNotMadeAfterItsWriterIsGone: a downgrade's read node, which
// borrows its writer's sequence number, is not created once the writer's
// node may be gone. Here the read node's create is lost on the way, the
// write lease is lost meanwhile (the watchdog), and on reconnecting (the
// same session) the engine deletes the writer's node while the recovery
// read finds the read node never made. A writer of another client, queued
// behind the first, may then be granted; the read node, made after that,
// would sort before it and be granted beside it.
func TestDowngradeNotMadeAfterItsWriterIsGone(t *testing.T) {
	const trials = 2
	for trial := range trials {
		downgradeAfterWriterGone(t, trial)
	}
}

func downgradeAfterWriterGone(t *testing.T, trial int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := lockRoot(t) + "/L"
	var m muting
	// Trusted for 4s after the last answer, while the server keeps the
	// session 9s: a lapse the session outlives.
	a := startEngine(t, engine.Config{SessionTimeout: 9 * time.Second, LostMargin: 5 * time.Second, Dialer: m.Dial})
	c := startEngine(t, engine.Config{})

	rw := lock.NewRWMutex(a, path)
	w, err := rw.Writer().Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w2 := lock.NewRWMutex(c, path).Writer().Acquire(ctx)
	eventually(t, "c's writer waits", func() bool { return waits(c.Stats()) > 0 })

	m.muted.Store(true)
	r := rw.Downgrade(ctx, w) // its create is lost on the way
	select {
	case <-w.Lost():
	case <-ctx.Done():
		t.Fatalf("trial %d: the write lease was never lost", trial)
	}
	m.Cut() // fails the lost create; the client reconnects, same session
	m.muted.Store(false)
	m.Heal()

	lr, rerr := r.Wait(ctx)
	if rerr == nil {
		// c's writer, if it listed before the read node was made, is
		// granted whatever the read node does: give it the time to be.
		select {
		case <-w2.Done():
		case <-time.After(2 * time.Second):
		}
	}
	lw2, w2done := (*lock.Lease)(nil), false
	if l, ok, err := w2.Result(); ok && err == nil {
		lw2, w2done = l, true
	}
	t.Logf("trial %d: read lease: err=%v; c's writer granted by then: %v", trial, rerr, w2done)
	if rerr == nil && w2done && lw2.Held() {
		t.Fatalf("trial %d: the downgrade's read lease was granted while another client's writer held", trial)
	}
	if rerr == nil {
		if err := lr.Release(ctx); err != nil {
			t.Fatal(err)
		}
	} else if !errors.Is(rerr, engine.ErrLost) {
		t.Fatalf("trial %d: read lease: %v, want ErrLost", trial, rerr)
	}
	lw2, err = w2.Wait(ctx)
	if err != nil {
		t.Fatalf("trial %d: c's writer: %v", trial, err)
	}
	if err := lw2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

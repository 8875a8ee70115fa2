package lock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
)

// blackhole is a loopback TCP proxy in front of a server that can go
// silent: once silenced it still accepts and keeps connections, old and
// new, but forwards nothing either way and answers nothing, as a
// partitioned network or a hung server does. Without a target it is silent
// from the start: a server that accepts TCP and never says a word.
type blackhole struct {
	ln     net.Listener
	target string
	silent atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	done  bool
	wg    sync.WaitGroup
}

func newBlackhole(t testing.TB, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln, target: target}
	b.silent.Store(target == "")
	b.wg.Go(b.accept)
	return b
}

func (b *blackhole) Addr() string { return b.ln.Addr().String() }

// Silence stops all forwarding, at once and for good.
func (b *blackhole) Silence() { b.silent.Store(true) }

// Close drops every connection and waits for the proxy's goroutines.
func (b *blackhole) Close() {
	b.ln.Close()
	b.mu.Lock()
	b.done = true
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// track keeps c for Close; false (c closed) once the proxy is closing.
func (b *blackhole) track(c net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		c.Close()
		return false
	}
	b.conns = append(b.conns, c)
	return true
}

func (b *blackhole) accept() {
	for {
		client, err := b.ln.Accept()
		if err != nil {
			return
		}
		if !b.track(client) {
			return
		}
		if b.silent.Load() {
			b.wg.Go(func() { b.pipe(client, nil) })
			continue
		}
		server, err := net.Dial("tcp", b.target)
		if err != nil || !b.track(server) {
			client.Close()
			continue
		}
		b.wg.Go(func() { b.pipe(client, server) })
		b.wg.Go(func() { b.pipe(server, client) })
	}
}

// pipe copies src to dst until either closes, dropping everything once the
// proxy is silent (or always, without a dst).
func (b *blackhole) pipe(src, dst net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && dst != nil && !b.silent.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stall says how a trial keeps the holder's loop goroutine busy after its
// connection goes silent, through a Config.Observer that blocks on a report
// the trial triggers.
type stall int

const (
	stallNone       stall = iota
	stallAcrossRead       // a short stall across the client's read timeout, when it redials
	stallThroughout       // from the silence until the other client is granted
)

func (s stall) String() string { return [...]string{"none", "across-read-timeout", "throughout"}[s] }

// trustTrial is one holder engine behind a proxy that goes silent, and one
// other client waiting for the same lock on a direct connection.
type trustTrial struct {
	n       int
	stall   stall
	asked   time.Duration // the session timeout the holder asks for
	path    string
	stalled string // the lock path whose cancellation stalls the holder's loop

	unstall   chan struct{}
	granted   chan struct{}
	held      *lock.Lease
	silenced  time.Time
	grantedAt time.Time
	lostAt    atomic.Int64 // nanoseconds after silenced, once Lost() closed
	// lostAtGrant: the holder's Lost() was closed when the other client's
	// grant was reported, on that client's loop.
	lostAtGrant bool
}

// TestLostClosesBeforeExpiryBehindSilentServers: a holder's Lost() closes
// before the server expires its session, so before another client can be
// granted the lock, even when its connection goes silent, the client then
// redials a server that accepts TCP and never answers, and its loop is
// stalled. The server grants at most 2s; half the holders ask for 30s, so
// the engine must use the server's value (read from the handshake).
func TestLostClosesBeforeExpiryBehindSilentServers(t *testing.T) {
	const granted = 2 * time.Second
	srv := zkserver.StartT(t, zkserver.Options{MaxSessionTimeout: granted})
	root := lockRoot(t)
	const rounds, perRound = 4, 8
	var trials []*trustTrial
	for round := range rounds {
		var wg sync.WaitGroup
		batch := make([]*trustTrial, perRound)
		for i := range batch {
			n := round*perRound + i
			tr := &trustTrial{
				n:       n,
				stall:   stall(n % 3),
				asked:   []time.Duration{granted, 30 * time.Second}[n/3%2],
				path:    fmt.Sprintf("%s/L%d", root, n),
				stalled: fmt.Sprintf("%s/S%d", root, n),
				unstall: make(chan struct{}),
				granted: make(chan struct{}),
			}
			batch[i] = tr
			wg.Go(func() { tr.run(t, srv.Addr(), granted) })
		}
		wg.Wait()
		trials = append(trials, batch...)
	}
	for _, tr := range trials {
		lost := "never"
		if ns := tr.lostAt.Load(); ns != 0 {
			lost = time.Duration(ns).Round(time.Millisecond).String()
		}
		t.Logf("trial %2d stall=%-19s asked=%-3v: Lost() closed %7s, other granted %v after the silence; lost at grant: %v",
			tr.n, tr.stall, tr.asked, lost, tr.grantedAt.Sub(tr.silenced).Round(time.Millisecond), tr.lostAtGrant)
	}
	for _, tr := range trials {
		if !tr.lostAtGrant {
			t.Errorf("trial %d (stall %v, asked %v): another client was granted the lock before the holder's Lost() closed", tr.n, tr.stall, tr.asked)
		}
	}
}

func (tr *trustTrial) run(t *testing.T, server string, timeout time.Duration) {
	ctx := context.Background()
	proxy := newBlackhole(t, server)
	silent := newBlackhole(t, "")
	// Runs before the engines close (defers run last in, first out): the
	// holder's client may be waiting on a silent connection.
	closeProxies := func() { proxy.Close(); silent.Close() }
	defer closeProxies()

	// The silent server is refused until the proxy goes silent, so that the
	// session starts through the proxy; then the client's redial may land
	// on either.
	var reachable atomic.Bool
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		if addr == silent.Addr() && !reachable.Load() {
			return nil, errors.New("not reachable yet")
		}
		return net.DialTimeout(network, addr, timeout)
	}
	a, err := engine.Start(ctx, engine.Config{
		Servers:        []string{proxy.Addr(), silent.Addr()},
		SessionTimeout: tr.asked,
		Dialer:         dial,
		Observer: func(r events.Report) {
			if r.Kind == events.Cancelled && r.Path == tr.stalled {
				<-tr.unstall
			}
		},
	})
	if err != nil {
		t.Errorf("trial %d: start holder: %v", tr.n, err)
		return
	}
	defer a.Close()
	defer closeProxies()

	tr.held, err = lock.NewMutex(a, tr.path).Lock(ctx)
	if err != nil {
		t.Errorf("trial %d: holder: %v", tr.n, err)
		return
	}
	b, err := engine.Start(ctx, engine.Config{
		Servers: []string{server},
		Observer: func(r events.Report) {
			if r.Kind == events.Granted && r.Path == tr.path && !r.Member { // the node's grant
				tr.grantedAt = time.Now()
				tr.lostAtGrant = closed(tr.held.Lost())
				close(tr.granted)
			}
		},
	})
	if err != nil {
		t.Errorf("trial %d: start other: %v", tr.n, err)
		return
	}
	defer b.Close()
	other := lock.NewMutex(b, tr.path).Acquire(ctx)
	for deadline := time.Now().Add(30 * time.Second); b.Stats().Watches == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("trial %d: the other client never waited", tr.n)
			return
		}
	}

	tr.silenced = time.Now()
	go func() {
		<-tr.held.Lost()
		tr.lostAt.Store(int64(time.Since(tr.silenced)))
	}()
	reachable.Store(true)
	proxy.Silence()

	// Stall the holder's loop: an acquisition sent into the silence,
	// cancelled, makes the loop report a cancellation, and the observer
	// blocks on it.
	stallCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	switch tr.stall {
	case stallAcrossRead:
		lock.NewMutex(a, tr.stalled).Acquire(stallCtx)
		// go-zookeeper's read timeout is two thirds of the session timeout.
		time.Sleep(timeout*2/3 - 150*time.Millisecond)
		cancel()
		time.AfterFunc(400*time.Millisecond, func() { close(tr.unstall) })
	case stallThroughout:
		lock.NewMutex(a, tr.stalled).Acquire(stallCtx)
		cancel()
	default:
		close(tr.unstall)
	}
	select {
	case <-tr.granted:
	case <-time.After(time.Minute):
		t.Errorf("trial %d: the other client was never granted", tr.n)
	}
	if tr.stall == stallThroughout {
		close(tr.unstall)
	}
	if l, err := other.Wait(ctx); err == nil {
		l.Release(ctx)
	}
}

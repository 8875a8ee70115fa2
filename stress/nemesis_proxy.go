package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// delayProxy is the nemesis client's latency fault: a small proxy inside
// the client process, in its own network namespace, between its engine and
// the servers. There is no netem on these machines, so the delay is added
// here, in user space. The engine's Dialer is the proxy's dial: it dials the
// real server itself (so an unreachable server fails the dial within the
// same timeout as without the proxy, and a partition's drop rules in the
// namespace still apply), then hands the engine one end of a socket pair
// and pumps bytes between the other end and the server, each chunk held
// until its delay has passed. The parent turns the delay on and off over
// the client's stdin (nemesis_client.go).
type delayProxy struct {
	delay atomic.Int64 // nanoseconds, each way; 0 for none
	// now and sleep are the clock, which the tests replace: a chunk read
	// at now() is written at now()+delay (the delay when it was read).
	now   func() time.Time
	sleep func(time.Duration)

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newDelayProxy() *delayProxy {
	return &delayProxy{now: time.Now, sleep: time.Sleep, conns: map[net.Conn]struct{}{}}
}

// errProxyClosed: the proxy was closed; it dials no more.
var errProxyClosed = errors.New("delay proxy closed")

// setDelay sets the delay of every chunk read from now on, in each
// direction; a chunk already held keeps the delay it was read with.
func (p *delayProxy) setDelay(d time.Duration) { p.delay.Store(int64(max(d, 0))) }

// dial has the engine's Dialer's signature.
func (p *delayProxy) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	up, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	// Close-on-exec set under ForkLock, as the standard library does where
	// SOCK_CLOEXEC is missing (the harness builds on macOS too).
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		up.Close()
		return nil, fmt.Errorf("delay proxy: socketpair: %w", err)
	}
	mine, err := fileConn(fds[0])
	if err != nil {
		syscall.Close(fds[1])
		up.Close()
		return nil, err
	}
	theirs, err := fileConn(fds[1])
	if err != nil {
		mine.Close()
		up.Close()
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		mine.Close()
		theirs.Close()
		up.Close()
		return nil, errProxyClosed
	}
	p.conns[mine], p.conns[up] = struct{}{}, struct{}{}
	p.wg.Add(4)
	p.mu.Unlock()
	// Either side's end or error ends both: the engine sees its
	// connection close as it would without the proxy.
	var once sync.Once
	end := func() {
		once.Do(func() {
			mine.Close()
			up.Close()
			p.mu.Lock()
			delete(p.conns, mine)
			delete(p.conns, up)
			p.mu.Unlock()
		})
	}
	p.pump(up, mine, end)
	p.pump(mine, up, end)
	return theirs, nil
}

// fileConn makes a net.Conn of a socket's descriptor (net.FileConn dups
// it, so the descriptor is closed here).
func fileConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "delay-proxy")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("delay proxy: %w", err)
	}
	return c, nil
}

// chunk is bytes read from one side, due on the other at due.
type chunk struct {
	b   []byte
	due time.Time
}

// pump copies src to dst, each chunk delayed, in order: a reader that
// stamps each chunk with its due time and a writer that waits for it, so
// that the delay adds to each chunk's latency without cutting the
// throughput to one chunk per delay.
func (p *delayProxy) pump(dst, src net.Conn, end func()) {
	q := make(chan chunk, 256)
	go func() {
		defer p.wg.Done()
		defer close(q)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{b: append([]byte(nil), buf[:n]...), due: p.now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		defer p.wg.Done()
		defer end()
		for c := range q {
			if wait := c.due.Sub(p.now()); wait > 0 {
				p.sleep(wait)
			}
			if _, err := dst.Write(c.b); err != nil {
				end()
				for range q {
				}
				return
			}
		}
	}()
}

// Close ends every proxied connection and waits for the pumps.
func (p *delayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

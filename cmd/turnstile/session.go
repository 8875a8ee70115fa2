package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/tlsdial"
)

// sessionTimeout is what the tool asks of the server. It holds no lock, so
// a short session only makes the server forget a killed tool sooner.
const sessionTimeout = 10 * time.Second

// session is the tool's plain ZooKeeper session: it reads lock paths and
// writes revocation requests; it never creates a node.
type session struct {
	conn   *zk.Conn
	events <-chan zk.Event
	root   string // the -root prefix, "" for none

	calls sync.WaitGroup // requests started by call, which close waits for

	mu       sync.Mutex
	states   []zk.State    // session state changes not yet taken, oldest first
	changed  chan struct{} // has a value while states is not empty
	dialFail error         // why the last connection attempt failed, if it did
}

// maxStates bounds the state changes kept for a watch that is busy; older
// ones are dropped (the watch reads the connection's state anyway).
const maxStates = 32

// dial connects to o's servers, waits for a session within o.timeout, and
// adds o's credentials to it.
func dial(ctx context.Context, o options) (*session, error) {
	s := &session{root: o.root, changed: make(chan struct{}, 1)}
	servers := strings.Split(o.servers, ",")
	var connect tlsdial.DialFunc = net.DialTimeout
	if o.tls != nil {
		connect = tlsdial.Wrap(connect, o.tls)
	}
	conn, events, err := zk.Connect(servers, sessionTimeout,
		zk.WithDialer(s.dialer(connect)),
		zk.WithLogger(discard{}), zk.WithLogInfo(false), zk.WithEventCallback(s.onEvent))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", o.servers, err)
	}
	s.conn, s.events = conn, events
	timer := time.NewTimer(o.timeout)
	defer timer.Stop()
	for {
		select {
		case <-s.changed:
		case <-timer.C:
			s.close()
			err := fmt.Errorf("no ZooKeeper session with %s within %v", o.servers, o.timeout)
			if last := s.lastDialFailure(); last != nil {
				err = fmt.Errorf("%w (last attempt: %w)", err, last)
			}
			return nil, err
		case <-ctx.Done():
			s.close()
			return nil, ctx.Err()
		}
		switch s.takeStates() {
		case zk.StateHasSession:
			if err := s.addAuth(ctx, o.auth); err != nil {
				s.close()
				return nil, err
			}
			return s, nil
		case zk.StateAuthFailed:
			s.close()
			return nil, fmt.Errorf("ZooKeeper at %s refused the session's authentication", o.servers)
		}
	}
}

func (s *session) addAuth(ctx context.Context, auth string) error {
	if auth == "" {
		return nil
	}
	scheme, cred, _ := strings.Cut(auth, ":")
	_, err := call(ctx, s, func() (struct{}, error) {
		return struct{}{}, s.conn.AddAuth(scheme, []byte(cred))
	})
	if err != nil {
		return fmt.Errorf("add %s credentials: %w", scheme, err)
	}
	return nil
}

// dialer connects with connect and keeps the reason of a failure: when no
// session comes, a refused connection or a certificate that does not
// verify says more than the timeout.
func (s *session) dialer(connect tlsdial.DialFunc) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		c, err := connect(network, address, timeout)
		s.mu.Lock()
		s.dialFail = err
		s.mu.Unlock()
		return c, err
	}
}

func (s *session) lastDialFailure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dialFail
}

// onEvent runs on the client's receive goroutine: it must not block.
func (s *session) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.mu.Lock()
	if len(s.states) == maxStates {
		s.states = s.states[1:]
	}
	s.states = append(s.states, ev.State)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// takeStates returns the session states reported since the last call, and
// the last of them (zk.StateUnknown when none).
func (s *session) takeStates() zk.State {
	states := s.drainStates()
	if len(states) == 0 {
		return zk.StateUnknown
	}
	return states[len(states)-1]
}

func (s *session) drainStates() []zk.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	states := s.states
	s.states = nil
	return states
}

// close ends the session and returns once the client's goroutines, and
// every request started by call, are done.
func (s *session) close() {
	s.conn.Close()
	for range s.events {
	}
	s.calls.Wait()
}

// call runs one request of the client, giving up (but not abandoning the
// request, which close waits for) when ctx ends: a request sent while the
// connection is down waits for the next one.
func call[T any](ctx context.Context, s *session, req func() (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	s.calls.Go(func() {
		v, err := req()
		done <- result{v, err}
	})
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// full is the server path of p, a path given on the command line.
func (s *session) full(p string) string {
	if p == "/" && s.root != "" {
		return s.root
	}
	return s.root + p
}

// rel is how a server path is shown: relative to the root.
func (s *session) rel(full string) string {
	if s.root == "" {
		return full
	}
	if r := strings.TrimPrefix(full, s.root); r != full {
		if r == "" {
			return "/"
		}
		return r
	}
	return full
}

// children lists p's children; (nil, false) when p does not exist.
func (s *session) children(ctx context.Context, p string) ([]string, bool, error) {
	children, err := call(ctx, s, func() ([]string, error) {
		c, _, err := s.conn.Children(p)
		return c, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", s.rel(p), err)
	}
	return children, true, nil
}

// discard drops the client's log lines: the tool's output is its own.
type discard struct{}

func (discard) Printf(string, ...any) {}

package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// gozkImpl is go-zookeeper/zk's own Lock recipe, used the way its API asks:
// one goroutine per worker (and per waiter) blocked in Lock, all on one
// shared connection.
type gozkImpl struct{}

func (gozkImpl) Name() string         { return "gozk" }
func (gozkImpl) Excludes() bool       { return true }
func (gozkImpl) Backend() backendKind { return zookeeperBackend }

func (gozkImpl) Supports(workload string, faults faultSet) error {
	switch workload {
	case "rw", "semaphore", "election":
		return unsupported("gozk", "-workload "+workload, "go-zookeeper/zk has only a mutex recipe (zk.Lock)")
	case "twoproc":
		return unsupported("gozk", "-workload "+workload, "its second process is a turnstile program")
	}
	if faults.has("cancel") {
		return unsupported("gozk", "-faults cancel", "zk.Lock takes no context: an acquisition cannot be cancelled")
	}
	return nil
}

func (gozkImpl) Open(ctx context.Context, o openOptions) (client, error) {
	conn, err := dialZK(ctx, o.Servers, o.SessionTimeout)
	if err != nil {
		return nil, err
	}
	return &gozkClient{zkConn: conn, data: o.Marker}, nil
}

type gozkClient struct {
	*zkConn
	data []byte
}

func (c *gozkClient) Mutex(path string) (locker, error) {
	return &gozkLocker{c: c, path: path}, nil
}

func (c *gozkClient) RWMutex(string) (rwLocker, error) {
	return nil, unsupported("gozk", "-workload rw", "go-zookeeper/zk has only a mutex recipe (zk.Lock)")
}

func (c *gozkClient) Semaphore(string, int) (locker, error) {
	return nil, unsupported("gozk", "-workload semaphore", "go-zookeeper/zk has only a mutex recipe (zk.Lock)")
}

func (c *gozkClient) Requests() int64 { return -1 }

type gozkLocker struct {
	c    *gozkClient
	path string
}

// Acquire ignores ctx, as zk.Lock must: it has no way to give up a wait.
func (l *gozkLocker) Acquire(context.Context) (held, error) {
	zl := zk.NewLock(l.c.conn, l.path, zk.WorldACL(zk.PermAll))
	if err := zl.LockWithData(l.c.data); err != nil {
		return nil, err
	}
	return gozkHeld{zl}, nil
}

type gozkHeld struct{ l *zk.Lock }

func (gozkHeld) Token() (int64, bool)            { return 0, false }
func (gozkHeld) Lost() <-chan struct{}           { return nil }
func (h gozkHeld) Release(context.Context) error { return h.l.Unlock() }

// zkConn is one plain go-zookeeper session, shared by the gozk and rawzk
// impls and by the orphan scan.
type zkConn struct {
	conn   *zk.Conn
	events <-chan zk.Event
	once   sync.Once
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// dialZK connects and waits for a session, within ctx.
func dialZK(ctx context.Context, servers []string, sessionTimeout time.Duration) (*zkConn, error) {
	// go-zookeeper shuffles the server list with its own random source; that
	// choice is the one thing in a run not drawn from -seed.
	conn, events, err := zk.Connect(servers, sessionTimeout, zk.WithLogInfo(false), zk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, err
	}
	c := &zkConn{conn: conn, events: events}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, fmt.Errorf("zookeeper %s: connection closed before a session", strings.Join(servers, ","))
			}
			if ev.State == zk.StateHasSession {
				return c, nil
			}
			if ev.State == zk.StateAuthFailed {
				c.Close()
				return nil, fmt.Errorf("zookeeper %s: auth failed", strings.Join(servers, ","))
			}
		case <-ctx.Done():
			c.Close()
			return nil, fmt.Errorf("zookeeper %s: no session: %w", strings.Join(servers, ","), ctx.Err())
		}
	}
}

// Close closes the session and waits until the client's goroutines are gone
// (its event channel closes last).
func (c *zkConn) Close() error {
	c.once.Do(func() {
		c.conn.Close()
		for range c.events {
		}
	})
	return nil
}

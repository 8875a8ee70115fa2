package main

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
)

// rawzkImpl takes no lock at all: each cycle is the bare create of an
// ephemeral sequential node, one getChildren of the lock path and one
// delete, on one shared connection. It is the ceiling the wire allows for
// a lock cycle (3 requests), so the exclusion checkers do not apply to it.
// On the keys workload (openOptions.Cold) the cycle first makes the key a
// container node: the bare cold cycle, 4 requests, which leaves nothing
// behind that the server does not reap.
type rawzkImpl struct{}

func (rawzkImpl) Name() string         { return "rawzk" }
func (rawzkImpl) Excludes() bool       { return false }
func (rawzkImpl) Backend() backendKind { return zookeeperBackend }

func (rawzkImpl) Supports(workload string, faults faultSet) error {
	switch workload {
	case "uncontended", "contended", "paths", "keys":
	default:
		return unsupported("rawzk", "-workload "+workload, "rawzk takes no lock, so nothing waits, reads, writes or counts leases")
	}
	if faults.has("cancel") {
		return unsupported("rawzk", "-faults cancel", "rawzk never waits, so there is no acquisition to cancel")
	}
	if faults.has("pause") {
		return unsupported("rawzk", "-faults pause", "rawzk takes no lock, so no holder can stall")
	}
	return nil
}

func (rawzkImpl) Open(ctx context.Context, o openOptions) (client, error) {
	conn, err := dialZK(ctx, o.Servers, o.SessionTimeout)
	if err != nil {
		return nil, err
	}
	return &rawzkClient{zkConn: conn, data: o.Marker, cold: o.Cold}, nil
}

type rawzkClient struct {
	*zkConn
	data []byte
	cold bool
}

func (c *rawzkClient) Mutex(path string) (locker, error) { return &rawzkLocker{c: c, path: path}, nil }

func (c *rawzkClient) RWMutex(string) (rwLocker, error) {
	return nil, unsupported("rawzk", "-workload rw", "rawzk takes no lock")
}

func (c *rawzkClient) Semaphore(string, int) (locker, error) {
	return nil, unsupported("rawzk", "-workload semaphore", "rawzk takes no lock")
}

func (c *rawzkClient) Requests() int64 { return -1 }

type rawzkLocker struct {
	c    *rawzkClient
	path string
}

func (l *rawzkLocker) Acquire(context.Context) (held, error) {
	conn := l.c.conn
	if l.c.cold {
		if err := createKey(conn, l.path); err != nil {
			return nil, err
		}
	}
	node, err := createLockNode(conn, l.path, l.c.data)
	if err != nil {
		return nil, err
	}
	if _, _, err := conn.Children(l.path); err != nil {
		_ = conn.Delete(node, -1)
		return nil, err
	}
	return rawzkHeld{conn: conn, node: node}, nil
}

// createKey makes a key's lock path a container node (the keys workload's
// parents exist already); one that exists is no error.
func createKey(conn *zk.Conn, path string) error {
	_, err := conn.CreateContainer(path, nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	return nil
}

// createLockNode creates an ephemeral sequential path/lock-N, and path's
// missing parents on the first use of a path.
func createLockNode(conn *zk.Conn, path string, data []byte) (string, error) {
	node, err := conn.Create(path+"/lock-", data, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNoNode) {
		return node, err
	}
	p := ""
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		p += "/" + seg
		_, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll))
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return "", err
		}
	}
	return conn.Create(path+"/lock-", data, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
}

type rawzkHeld struct {
	conn *zk.Conn
	node string
}

func (rawzkHeld) Token() (int64, bool)  { return 0, false }
func (rawzkHeld) Lost() <-chan struct{} { return nil }
func (h rawzkHeld) Release(context.Context) error {
	return h.conn.Delete(h.node, -1)
}

package engine

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
)

// The engine's loop body (handle every event of a turn, then pump the
// requests it decided) is deterministic given its events. Everything it
// reaches outside itself goes through the seams below: the ZooKeeper
// client, the goroutine each request runs on, timers, and context
// cancellation. Production fills them with the real thing (Start); the
// simulator (sim_test.go) fills them with a simulated world that it steps
// from one seed, single-threaded.

// zkConn is what the engine asks of its ZooKeeper client. *zk.Conn is the
// production one.
type zkConn interface {
	Create(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error)
	Children(path string) ([]string, *zk.Stat, error)
	ChildrenW(path string) ([]string, *zk.Stat, <-chan zk.Event, error)
	Get(path string) ([]byte, *zk.Stat, error)
	GetW(path string) ([]byte, *zk.Stat, <-chan zk.Event, error)
	Set(path string, data []byte, version int32) (*zk.Stat, error)
	Delete(path string, version int32) error
	Multi(ops ...any) ([]zk.MultiResponse, error)
	Sync(path string) (string, error)
	Exists(path string) (bool, *zk.Stat, error)
	AddAuth(scheme string, auth []byte) error
	SessionID() int64
}

var _ zkConn = (*zk.Conn)(nil)

// timer is an armed timer: *time.Timer in production.
type timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// runtime is the engine's outside world but for the client itself.
type runtime struct {
	// newID makes a contender's protected id (queue.NewID).
	newID func() string
	// goroutine runs one request, which blocks on the client, to its end.
	goroutine func(f func())
	// afterFunc runs f once d has passed, unless stopped first.
	afterFunc func(d time.Duration, f func()) timer
	// afterDone runs f once ctx is done, unless stop is called first.
	afterDone func(ctx context.Context, f func()) (stop func() bool)
	// closeConn closes the session and returns once the client's own
	// goroutines have exited.
	closeConn func()
}

// realAfterFunc is time.AfterFunc as a timer.
func realAfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

// Package turnstiletest starts a real Apache ZooKeeper for the tests of a
// program that uses turnstile: a standalone server, or an ensemble of
// three on loopback, each on free 127.0.0.1 ports in a temp dir of its own,
// stopped and removed when the test ends. A test can end a client's
// session as the server does when it times out, and stop and restart a
// server.
//
//	func TestJob(t *testing.T) {
//		zk := turnstiletest.Start(t)
//		eng, err := engine.Start(ctx, engine.Config{Servers: zk.Servers(), Dialer: zk.Dial})
//		...
//		zk.ExpireSession(ctx, eng.SessionID()) // every lease of eng is lost
//	}
//
// It runs the ZooKeeper server jar on Java, found as follows (the
// environment variables override):
//
//	JAVA          the java binary (default: java on PATH)
//	ZK_JAR        the ZooKeeper 3.5+ server jar (default /usr/share/java/zookeeper.jar,
//	              from Debian's and Ubuntu's zookeeper package)
//	ZK_CLASSPATH  with ZK_JAR: the rest of the classpath, e.g. "/opt/zookeeper/lib/*"
//
// On Debian or Ubuntu, `apt-get install zookeeper` installs both (Java 17
// and ZooKeeper 3.8). Where either is missing, Start fails the test saying
// what to install; call Available first to skip instead.
//
// Every server process is started by this package, signalled only by its
// PID, and killed with the test binary if that dies first (on Linux). The
// package builds on Unix systems (Linux, macOS, the BSDs), not on Windows.
package turnstiletest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// ErrNotInstalled is returned (wrapped) by Available and New when Java or
// the ZooKeeper jar cannot be found. Its message says what to install.
var ErrNotInstalled = errors.New("turnstiletest: ZooKeeper needs Java 17 and the ZooKeeper 3.8 server jar: on Debian or Ubuntu, apt-get install zookeeper; elsewhere set ZK_JAR to the jar (and ZK_CLASSPATH to its dependencies) and JAVA to the java binary")

// startTimeout bounds the start of a cluster for Start and StartEnsemble.
const startTimeout = 2 * time.Minute

// Cluster is one ZooKeeper for tests: a standalone server or an ensemble.
// Its methods are safe for concurrent use.
type Cluster struct {
	servers  []*zkserver.Server
	ensemble *zkserver.Ensemble // nil when standalone
	sessions zkserver.Sessions
}

// Available reports whether a server can be started here: nil, or an error
// wrapping ErrNotInstalled that says what is missing and what to install.
// It starts nothing.
func Available() error {
	if _, _, err := zkserver.Classpath(); err != nil {
		return fmt.Errorf("%w (%v)", ErrNotInstalled, err)
	}
	return nil
}

// Start starts a standalone server for t and closes it when t and its
// subtests are done. It fails t, saying why (and what to install where
// Java or ZooKeeper is missing), when the server cannot start. If t fails,
// the tail of the server's log is written to t's log.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return startT(t, 1)
}

// StartEnsemble is Start with an ensemble of three servers, so that a test
// can stop one (StopServer) and the other two still serve.
func StartEnsemble(t testing.TB) *Cluster {
	t.Helper()
	return startT(t, 3)
}

func startT(t testing.TB, n int) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := New(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, s := range c.servers {
				t.Logf("turnstiletest: server %d (%s) log tail:\n%s", i, s.Addr(), s.LogTail(40))
			}
		}
		if err := c.Close(); err != nil {
			t.Errorf("turnstiletest: %v", err)
		}
	})
	return c
}

// New starts a cluster of n servers: 1 (standalone) or 3 (an ensemble).
// It is for a TestMain that shares one cluster among a package's tests,
// which must Close it; a test of its own uses Start or StartEnsemble.
func New(ctx context.Context, n int) (*Cluster, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	switch n {
	case 1:
		s, err := zkserver.Start(ctx, zkserver.Options{})
		if err != nil {
			return nil, notInstalled(err)
		}
		return &Cluster{servers: []*zkserver.Server{s}}, nil
	case 3:
		e, err := zkserver.StartEnsemble(ctx, n, zkserver.Options{})
		if err != nil {
			return nil, notInstalled(err)
		}
		return &Cluster{servers: e.Servers, ensemble: e}, nil
	}
	return nil, fmt.Errorf("turnstiletest: a cluster of %d servers; want 1 or 3", n)
}

// notInstalled makes the package's own message the one a missing install
// shows.
func notInstalled(err error) error {
	if errors.Is(err, zkserver.ErrNotInstalled) {
		return fmt.Errorf("%w (%v)", ErrNotInstalled, err)
	}
	return err
}

// Close stops every server and removes their temp dirs. Start and
// StartEnsemble call it when the test ends; it may be called again.
func (c *Cluster) Close() error {
	if c.ensemble != nil {
		return c.ensemble.Close()
	}
	return c.servers[0].Close()
}

// Servers are the servers' client addresses ("127.0.0.1:PORT"), for
// engine.Config.Servers. They do not change across StopServer and
// RestartServer.
func (c *Cluster) Servers() []string {
	addrs := make([]string, len(c.servers))
	for i, s := range c.servers {
		addrs[i] = s.Addr()
	}
	return addrs
}

// ConnectString is Servers joined by commas, as ZooKeeper's clients and
// turnstile's command-line tool (-servers) take it.
func (c *Cluster) ConnectString() string { return strings.Join(c.Servers(), ",") }

// Dial connects to a server as net.DialTimeout does, and lets
// ExpireSession end the sessions made over its connections. Set it as
// engine.Config.Dialer (or pass it to zk.WithDialer) for every client
// whose session a test will expire. It reads ZooKeeper's plain protocol:
// a client with engine.Config.TLS set hides its session from it.
func (c *Cluster) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	return c.sessions.Dial(network, address, timeout)
}

// ExpireSession ends the session id (engine.Engine.SessionID) as the server
// ends a session whose client went silent past its timeout: its ephemeral
// nodes (lock nodes, candidates) are deleted, and the client is told, at
// its next request or reconnection, that the session expired. A turnstile
// engine then closes every lease's Lost channel and queues its waiters
// again under a new session. ExpireSession returns once the server has
// closed the session. The session must have been made through Dial.
func (c *Cluster) ExpireSession(ctx context.Context, id int64) error {
	var running []string
	for _, s := range c.servers {
		if s.Running() {
			running = append(running, s.Addr())
		}
	}
	if len(running) == 0 {
		return errors.New("turnstiletest: expire session: no server is running")
	}
	err := c.sessions.Expire(ctx, running, id)
	if errors.Is(err, zkserver.ErrUnknownSession) {
		return fmt.Errorf("turnstiletest: expire session %#x: it was not made through Cluster.Dial (set it as engine.Config.Dialer)", id)
	}
	if err != nil {
		return fmt.Errorf("turnstiletest: expire session %#x: %w", id, err)
	}
	return nil
}

// StopServer stops server i (0 for a standalone server; 0, 1 or 2 in an
// ensemble), keeping its data for RestartServer. Clients connected to it
// lose their connection; in an ensemble they move to another server, and
// two of three still form a quorum.
func (c *Cluster) StopServer(i int) error {
	s, err := c.server(i)
	if err != nil {
		return err
	}
	return s.Stop()
}

// RestartServer starts server i again, on the same address and with the
// same data, and returns once it serves (in an ensemble: once it has
// joined the quorum).
func (c *Cluster) RestartServer(ctx context.Context, i int) error {
	s, err := c.server(i)
	if err != nil {
		return err
	}
	if err := s.Restart(ctx); err != nil {
		return err
	}
	if c.ensemble != nil {
		return c.ensemble.WaitReady(ctx)
	}
	return nil
}

func (c *Cluster) server(i int) (*zkserver.Server, error) {
	if i < 0 || i >= len(c.servers) {
		return nil, fmt.Errorf("turnstiletest: no server %d among %d", i, len(c.servers))
	}
	return c.servers[i], nil
}

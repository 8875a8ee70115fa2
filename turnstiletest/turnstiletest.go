// Package turnstiletest starts a real Apache ZooKeeper for the tests of a
// program that uses turnstile: a standalone server, or an ensemble of
// three on loopback, each on free 127.0.0.1 ports in a temp dir of its own,
// stopped and removed when the test ends. A test can end a client's
// session at the server (ExpireSession), silence and heal one client's
// connection (a Partition), and stop and restart a server (StopServer).
//
//	func TestJob(t *testing.T) {
//		zk := turnstiletest.Start(t, 1) // 3 for an ensemble
//		eng, err := engine.Start(ctx, engine.Config{Servers: zk.Servers, Dialer: zk.Dial})
//		...
//		zk.ExpireSession(ctx, eng.SessionID()) // every lease of eng is lost
//	}
//
// ExpireSession deletes the session's nodes at once, so another client may
// be granted before the holder hears; to test that Lost() closes before
// any other grant, cut the holder off with a Partition instead:
//
//	cut := zk.NewPartition()
//	holder, err := engine.Start(ctx, engine.Config{Servers: zk.Servers, Dialer: cut.Dial})
//	...
//	cut.Silence() // the server expires the session once its timeout passes
//	...
//	cut.Heal()
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
// what to install; to skip instead, call New and t.Skip with its error.
//
// Every server process is started by this package, signalled only by its
// PID, and killed with the test binary if that dies first (on Linux). The
// package builds on Unix systems (Linux, macOS, the BSDs), not on Windows.
//
// # A development ZooKeeper
//
// To run a program against a ZooKeeper of its own outside tests, on a port
// of your choice (here 21810, on loopback only), with the same install:
//
//	mkdir -p /tmp/zkdev/data
//	printf '%s\n' tickTime=2000 dataDir=/tmp/zkdev/data clientPort=21810 \
//	    clientPortAddress=127.0.0.1 admin.enableServer=false \
//	    '4lw.commands.whitelist=srvr,conf,ruok' > /tmp/zkdev/zoo.cfg
//	java -cp '/usr/share/java/zookeeper.jar:/usr/share/java/*' \
//	    org.apache.zookeeper.server.quorum.QuorumPeerMain /tmp/zkdev/zoo.cfg
//
// and give the program 127.0.0.1:21810 (engine.Config.Servers, or
// turnstile -servers 127.0.0.1:21810). With a ZooKeeper release tarball
// instead, put the same lines in conf/zoo.cfg and run bin/zkServer.sh
// start-foreground. Stop it with Ctrl-C; its data stays in dataDir.
package turnstiletest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// notInstalled is what a missing Java or ZooKeeper says: what to install.
const notInstalled = "turnstiletest: ZooKeeper needs Java 17 and the ZooKeeper 3.8 server jar: on Debian or Ubuntu, apt-get install zookeeper; elsewhere set ZK_JAR to the jar (and ZK_CLASSPATH to its dependencies) and JAVA to the java binary"

// startTimeout bounds the start of a cluster for Start.
const startTimeout = 2 * time.Minute

// Cluster is one ZooKeeper for tests: a standalone server or an ensemble.
// Its methods are safe for concurrent use.
type Cluster struct {
	// Servers are the servers' client addresses ("127.0.0.1:PORT"), for
	// engine.Config.Servers (joined by commas: a ZooKeeper connect string,
	// turnstile's -servers). They do not change when a server is stopped
	// and restarted. Do not modify them.
	Servers []string

	servers  []*zkserver.Server
	ensemble *zkserver.Ensemble // nil when standalone
	sessions zkserver.Sessions
}

// Start starts a cluster of n servers for t, 1 (standalone) or 3 (an
// ensemble, whose servers a test can stop one at a time while the other
// two serve), and closes it when t and its subtests are done. It fails t,
// saying why, and what to install where Java or ZooKeeper is missing, when
// the cluster cannot start. If t fails, the tail of each server's log is
// written to t's log.
func Start(t testing.TB, n int) *Cluster {
	if t == nil {
		panic(errNilTB)
	}
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

// New starts a cluster of n servers, 1 or 3, as Start does, for a TestMain
// that shares one cluster among a package's tests and must Close it. Its
// error says what to install where Java or ZooKeeper is missing; a test
// that would rather skip there than fail passes it to t.Skip.
func New(ctx context.Context, n int) (*Cluster, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if n != 1 && n != 3 {
		return nil, fmt.Errorf("turnstiletest: a cluster of %d servers; want 1 or 3", n)
	}
	if _, _, err := zkserver.Classpath(); err != nil {
		return nil, fmt.Errorf("%s (%w)", notInstalled, err)
	}
	c := &Cluster{}
	if n == 1 {
		s, err := zkserver.Start(ctx, zkserver.Options{})
		if err != nil {
			return nil, explain(err)
		}
		c.servers = []*zkserver.Server{s}
	} else {
		e, err := zkserver.StartEnsemble(ctx, n, zkserver.Options{})
		if err != nil {
			return nil, explain(err)
		}
		c.servers, c.ensemble = e.Servers, e
	}
	for _, s := range c.servers {
		c.Servers = append(c.Servers, s.Addr())
	}
	return c, nil
}

// explain makes the package's own message the one a missing install shows.
func explain(err error) error {
	if errors.Is(err, zkserver.ErrNotInstalled) {
		return fmt.Errorf("%s (%w)", notInstalled, err)
	}
	return err
}

// Close stops every server and removes their temp dirs. Start calls it
// when the test ends; it may be called again.
func (c *Cluster) Close() error {
	if err := c.check(context.Background()); err != nil {
		return err
	}
	if c.ensemble != nil {
		return c.ensemble.Close()
	}
	return c.servers[0].Close()
}

// Dial connects to a server as net.DialTimeout does, and lets
// ExpireSession end the sessions made over its connections. Set it as
// engine.Config.Dialer (or pass it to zk.WithDialer) for every client
// whose session a test will expire. It reads ZooKeeper's plain protocol:
// a client with engine.Config.TLS set hides its session from it.
func (c *Cluster) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if err := c.check(context.Background()); err != nil {
		return nil, err
	}
	return c.sessions.Dial(network, address, timeout)
}

// ExpireSession ends the session id (engine.Engine.SessionID) at the
// server, as the server ends a session whose client went silent past its
// timeout: its ephemeral nodes (lock nodes, candidates) are deleted, the
// server drops the client's connection, and the client is told, at its
// reconnection, that the session expired. A turnstile engine then closes
// every lease's Lost channel, with an Err that errors.Is finds both
// engine.ErrSessionExpired and engine.ErrLost in, and queues its waiters
// again under a new session. ExpireSession returns once the server has
// closed the session. The session must have been made through Dial (or a
// Partition's Dial). It may be called again and again on one engine, each
// time with the session it has then.
//
// An expiry forced this way deletes the session's nodes at once, before
// its client hears of it: another client may be granted the lock before
// the holder's Lost() closes. It tests what a holder does once it learns
// of an expiry, not the promise that Lost() closes before anyone else is
// granted; for that, silence the holder's connection with a Partition and
// let the server expire the session on its own.
func (c *Cluster) ExpireSession(ctx context.Context, id int64) error {
	if err := c.check(ctx); err != nil {
		return err
	}
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
// ensemble), keeping its data, and returns the function that starts it
// again on the same address and returns once it serves (in an ensemble:
// once it has joined the quorum). Clients connected to it lose their
// connection; in an ensemble they move to another server, and two of
// three still form a quorum.
func (c *Cluster) StopServer(i int) (restart func(context.Context) error, err error) {
	if err := c.check(context.Background()); err != nil {
		return nil, err
	}
	s, err := c.server(i)
	if err != nil {
		return nil, err
	}
	if err := s.Stop(); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		if err := s.Restart(ctx); err != nil {
			return err
		}
		if c.ensemble != nil {
			return c.ensemble.WaitReady(ctx)
		}
		return nil
	}, nil
}

func (c *Cluster) server(i int) (*zkserver.Server, error) {
	if i < 0 || i >= len(c.servers) {
		return nil, fmt.Errorf("turnstiletest: no server %d among %d", i, len(c.servers))
	}
	return c.servers[i], nil
}

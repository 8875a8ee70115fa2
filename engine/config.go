package engine

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/core"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/tlsdial"
)

// Config configures an Engine. Only Servers is required.
type Config struct {
	// Servers are ZooKeeper addresses, "host:port".
	Servers []string
	// SessionTimeout is the session timeout asked of the server (default
	// 10s). The server grants it clamped to its own bounds (its min and
	// maxSessionTimeout); the engine reads what was granted from the
	// server's handshake and judges whether a lease is lost by that.
	SessionTimeout time.Duration
	// ConnectTimeout bounds Start's wait for a first session, and then its
	// wait for the server to accept the credentials of Auth (default 15s).
	ConnectTimeout time.Duration
	// MaxInFlight bounds the ZooKeeper requests outstanding at once
	// (default 256). Requests beyond it wait in the loop's queue.
	MaxInFlight int
	// LostMargin is how long before the server could expire the session
	// the engine declares its leases lost (default a fifth of the session
	// timeout). It must cover the client's and server's clock drift, timer
	// lateness and the time a holder needs to stop: however soon the
	// session answers again, the node of a lease lost to a lapse stays for
	// this margin after Lost() closed, so no other client is granted the
	// lock before it has passed (unless the engine is closed). When the
	// server grants a timeout other than SessionTimeout, the margin stays
	// the same share of it (LostMargin × granted / SessionTimeout).
	LostMargin time.Duration
	// PreferLeader makes each dial ask every server for its role and
	// connect to the leader when one answers, as the engine did before
	// sessions spread. Every answer of the leader then moves the trust
	// deadline, with no syncs, and a lost follower costs nothing; the
	// price is that every session of every engine so configured crowds the
	// leader (its pings, listings and watches too), that an election
	// disconnects them all at once, and that an ensemble whose leader
	// serves no clients (leaderServes=no) sends them all to followers
	// anyway. By default (false) sessions spread over Servers in the
	// client's shuffled order, and on a follower the engine keeps trust
	// with a chain of syncs (DESIGN.md, "The trust deadline").
	PreferLeader bool
	// CloseTimeout bounds how long Close waits for the nodes of held and
	// waiting contenders to be deleted before it closes the session, which
	// removes them anyway (default 5s).
	CloseTimeout time.Duration
	// FailOnExpiry makes waiters fail with ErrSessionExpired when the
	// session expires, instead of queueing again under the new session
	// (and losing their place).
	FailOnExpiry bool
	// NoPin turns off the listing-free cycle: the engine never keeps a pin
	// (an ephemeral child named ~pin-<id>) on a mutex or read-write
	// lock path it cycles on, and every acquisition lists its path. Set it
	// where a client that fails on a child it cannot parse shares the
	// paths: go-zookeeper's own Lock does. Curator and kazoo sort a pin
	// after every lock node or skip it. See DESIGN.md, "the listing-free
	// cycle".
	NoPin bool
	// DeleteLockPaths has the delete of a lock node take its lock path
	// along, in one multi, where the engine made the path with that node
	// and nothing else of the engine is on it: a lock taken once per key
	// (a job id) then leaves the server no container to reap, which
	// halves the server's work per key. Leave it off where kazoo shares
	// the paths: a kazoo Lock makes sure of its path once and then only
	// creates under it, so its next acquire fails (NoNodeError) once the
	// path is gone. Curator, go-zookeeper and turnstile make the path
	// again. See DESIGN.md, "Cold keys".
	DeleteLockPaths bool
	// Logger receives the engine's logs (default: discarded).
	Logger *slog.Logger
	// Dialer connects to a server (default net.DialTimeout); tests and
	// deployments behind proxies set it.
	Dialer func(network, address string, timeout time.Duration) (net.Conn, error)
	// TLS, if set, makes every connection a TLS client connection with
	// this configuration, over the connection Dialer makes. The server must
	// serve TLS where Servers point: ZooKeeper 3.5 and later do so on
	// their secureClientPort (with the Netty connection factory,
	// serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory,
	// and the ssl.keyStore.* and ssl.trustStore.* settings), not on the
	// plain clientPort. The handshake is part of connecting: a server that
	// does not speak TLS, or whose certificate does not verify against
	// RootCAs, or that refuses the client's certificate, is a failed
	// connection, logged at warning level with the reason, and retried.
	// (ZooKeeper 3.8 speaks TLS 1.2 unless ssl.protocol says otherwise; in
	// TLS 1.3 a refused client certificate ends the connection only after
	// the handshake, which is retried the same way, the reason in the
	// client's debug log.) Start fails with ErrUnreachable once
	// ConnectTimeout has passed without a session.
	// Without ServerName, a server's certificate must name the host of its
	// address in Servers (an IP address among its IP SANs).
	//
	// A client certificate (Certificates, or GetClientCertificate) is
	// presented when the server asks for one; ZooKeeper's default,
	// ssl.clientAuth=need, refuses a client without one. The server
	// authenticates the session with it in the x509 scheme, under the
	// certificate's subject ("CN=app,O=example"): an ACL entry
	// {Scheme: "x509", ID: subject} names it, and zk.AuthACL gives the
	// rights to it even without Auth. The credentials of Auth are added
	// on top, over the encrypted connection: a session may hold both.
	TLS *tls.Config
	// Auth are the credentials the session presents, each added with
	// ZooKeeper's addAuth before Start returns. The client sends them again
	// on every new connection, before any other request, so they hold
	// across reconnects and session expiries. For digest authentication:
	// {Scheme: "digest", Secret: []byte("user:password")}.
	Auth []Credential
	// ACL is the access control list of every node the engine creates:
	// lock nodes, and the containers of lock paths (and of Root) that do
	// not exist yet. Default: zk.WorldACL(zk.PermAll), anyone may do
	// anything. zk.AuthACL(zk.PermAll) gives every right to the identities
	// of Auth alone (the creator), as does zk.DigestACL for a named user.
	// An operation the server refuses for lack of rights fails the
	// acquisition (or the release) with an error wrapping ErrNoAuth; it is
	// never retried.
	ACL []zk.ACL
	// ACLFor, when set, chooses the ACL of each node the engine creates
	// by its path (Curator's ACLProvider): path is the node's full path on
	// the server, Root included, so the containers of Root can be told from
	// those of lock paths; a sequential lock node's is the path it is
	// created with, before the server appends its sequence number. A nil
	// or empty result means ACL. It is called
	// for every lock node and container the engine creates, from the
	// engine's goroutines: it must be quick and safe for concurrent use.
	// The ACLs it returns are not checked at Start; one the server refuses
	// fails the acquisition.
	ACLFor func(path string) []zk.ACL
	// Root is a namespace, like a chroot: every path the engine is given
	// (a Request's, Children's, Data's, SetData's) lives under it, and every
	// path it hands back (Lease.Path, Lease.Node, the paths of
	// events.Report) is relative to it. Engines with different roots never
	// see each other's locks. It must be a valid path, such as "/myapp"
	// (see ValidatePath); empty or "/" means the server's root.
	Root string
	// Cohort bounds lock cohorting: how long a node this engine holds may
	// pass among its own acquisitions of the same lock before it goes back
	// to the other clients, or, with StrictFIFO, that it never does.
	Cohort CohortConfig
	// Observer, if set, is told when each acquisition starts and how it
	// ends (granted, failed, cancelled), and of each lease's suspensions,
	// revocation and end (released or lost); see events.Report. It runs on
	// the loop goroutine and must return quickly.
	Observer func(events.Report)

	// Set by withDefaults, from SessionTimeout: a server lost must be
	// passed over, and another reached, well within the session's
	// lifetime (see DESIGN.md, "The trust deadline").
	dialTimeout time.Duration // the most one dial, or one role probe, may take
	probeGrace  time.Duration // how long a follower's answer waits for a leader's; 0: dials do not look for the leader
}

func (c Config) withDefaults() (Config, error) {
	if len(c.Servers) == 0 {
		return c, fmt.Errorf("%w: no servers", ErrInvalidConfig)
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.SessionTimeout < 0 || c.ConnectTimeout < 0 || c.MaxInFlight < 0 || c.LostMargin < 0 || c.CloseTimeout < 0 {
		return c, fmt.Errorf("%w: negative duration or bound", ErrInvalidConfig)
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 15 * time.Second
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 256
	}
	if c.LostMargin == 0 {
		c.LostMargin = c.SessionTimeout / 5
	}
	if c.LostMargin >= c.SessionTimeout {
		return c, fmt.Errorf("%w: LostMargin %v not below SessionTimeout %v", ErrInvalidConfig, c.LostMargin, c.SessionTimeout)
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = 5 * time.Second
	}
	c.dialTimeout = min(max(c.SessionTimeout/8, 250*time.Millisecond), time.Second)
	c.probeGrace = 0
	if c.PreferLeader {
		c.probeGrace = min(max(c.SessionTimeout/20, 50*time.Millisecond), 500*time.Millisecond)
	}
	cohorts, err := core.CohortConfig{MaxPasses: c.Cohort.MaxPasses, MaxHold: c.Cohort.MaxHold, Linger: c.Cohort.Linger}.WithDefaults()
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c.Cohort.MaxPasses, c.Cohort.MaxHold = cohorts.MaxPasses, cohorts.MaxHold
	if err := c.validateSecurity(); err != nil {
		return c, err
	}
	if c.Root == "/" {
		c.Root = ""
	}
	if c.Root != "" {
		if err := ValidatePath(c.Root); err != nil {
			return c, fmt.Errorf("%w: Root: %w", ErrInvalidConfig, err)
		}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Dialer == nil {
		c.Dialer = net.DialTimeout
	}
	if c.TLS != nil {
		c.TLS = c.TLS.Clone()
		c.Dialer = tlsdial.Wrap(c.Dialer, c.TLS)
	}
	return c, nil
}

// CohortConfig bounds lock cohorting (see Request.Cohort): how long a node
// that this engine holds passes among its own waiters before it goes back
// to the other clients.
type CohortConfig struct {
	// StrictFIFO turns cohorting off: every acquisition queues a node of
	// its own on ZooKeeper and is granted in the order of the nodes, across
	// every client, at the cost of a ZooKeeper write for each handoff.
	StrictFIFO bool
	// MaxPasses bounds the local passes of one grant of a node (default
	// 1000, at most 4095, the pass numbers a token holds).
	MaxPasses int
	// MaxHold bounds the time, from the grant of the node, after which no
	// local pass starts while another client waits (default 100ms): one
	// listing of the lock path with a watch per grant, asked as a pass
	// becomes possible, tells (no pass past MaxHold before its answer).
	// Nobody in it and the watch quiet, passing goes on to MaxPasses
	// (CohortStats.Renewed). So another client waits for a node that
	// passes at most MaxHold and one holder's hold from the grant, or from
	// the notification that tells of it if later, however long the local
	// queue (but see YieldToOthers). Holders that hold for longer than
	// MaxHold pass only while nobody else waits: next to such a hold, the
	// handoff through ZooKeeper that a pass saves is short.
	MaxHold time.Duration
	// Linger, if positive, keeps a node after its last local release for
	// up to this long (never past MaxHold from its grant) while no other
	// client is seen waiting, so that this engine's next acquisition of the
	// lock is a pass: no request, a greater token. Another client seen (a
	// watch on the lock path), the lease's trust lapsing or the time up, the
	// node goes back at once: a client arriving meanwhile waits for one
	// notification and one deletion more than on a free lock. A try of
	// this engine is passed a lingering node too. 0: off.
	Linger time.Duration
	// YieldToOthers gives the node back after the current holder as soon
	// as another client is seen waiting on the lock path (in the listing
	// that granted the node, or by the listing with a watch above), and
	// starts no pass before that listing is answered. So a
	// client seen waits one hold and one handoff rather than up to
	// MaxHold, at the cost of the batch: a lock contended by several
	// processes then passes almost never, each holder's turn a handoff
	// through ZooKeeper. Off by default, since the bound already caps the
	// wait; for locks where another process's latency matters more than
	// the throughput of the whole.
	YieldToOthers bool
}

// DefaultCohortHold is the MaxHold a zero CohortConfig takes, exported for
// what measures a wait against it (a client another engine keeps out waits
// at most MaxHold and one hold).
const DefaultCohortHold = 100 * time.Millisecond

// Credential is one identity the session presents to ZooKeeper (addAuth):
// an authentication scheme the server knows, such as "digest", and its
// secret in that scheme's form ("user:password" for digest).
type Credential struct {
	Scheme string
	Secret []byte
}

// validateSecurity checks Auth and ACL and defaults ACL to the open one.
func (c *Config) validateSecurity() error {
	for _, cred := range c.Auth {
		if cred.Scheme == "" {
			return fmt.Errorf("%w: a credential without a scheme", ErrInvalidConfig)
		}
	}
	if len(c.ACL) == 0 {
		c.ACL = openACL
		return nil
	}
	for _, a := range c.ACL {
		switch {
		case a.Scheme == "":
			return fmt.Errorf("%w: an ACL entry without a scheme", ErrInvalidConfig)
		case a.Perms&zk.PermAll == 0 || a.Perms&^zk.PermAll != 0:
			return fmt.Errorf("%w: ACL entry %s:%s has permissions %#x", ErrInvalidConfig, a.Scheme, a.ID, a.Perms)
		case a.Scheme == "auth" && len(c.Auth) == 0 && !c.presentsCertificate():
			// The server would refuse every create with InvalidACL: the
			// "auth" scheme names the creator's identities, and there are
			// none, neither credentials nor a client certificate.
			return fmt.Errorf("%w: ACL scheme \"auth\" without Auth credentials or a TLS client certificate", ErrInvalidConfig)
		}
	}
	c.ACL = slices.Clone(c.ACL)
	return nil
}

// aclOf is the ACL of a node the engine creates at path, a server path.
func (c *Config) aclOf(path string) []zk.ACL {
	if c.ACLFor != nil {
		if acl := c.ACLFor(path); len(acl) > 0 {
			return acl
		}
	}
	return c.ACL
}

// presentsCertificate reports whether the session can present a TLS client
// certificate, which the server turns into an x509 identity.
func (c *Config) presentsCertificate() bool {
	return c.TLS != nil && (len(c.TLS.Certificates) > 0 || c.TLS.GetClientCertificate != nil)
}

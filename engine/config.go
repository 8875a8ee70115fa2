package engine

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/turnstile-go/turnstile/events"
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
	// ConnectTimeout bounds Start's wait for a first session (default 15s).
	ConnectTimeout time.Duration
	// MaxInFlight bounds the ZooKeeper requests outstanding at once
	// (default 256). Requests beyond it wait in the loop's queue.
	MaxInFlight int
	// LostMargin is how long before the server could expire the session
	// the engine declares its leases lost (default a fifth of the session
	// timeout). It must cover the client's and server's clock drift, timer
	// lateness and the time a holder needs to stop. When the server grants
	// a timeout other than SessionTimeout, the margin stays the same share
	// of it (LostMargin × granted / SessionTimeout).
	LostMargin time.Duration
	// CloseTimeout bounds how long Close waits for the nodes of held and
	// waiting contenders to be deleted before it closes the session, which
	// removes them anyway (default 5s).
	CloseTimeout time.Duration
	// FailOnExpiry makes waiters fail with ErrSessionExpired when the
	// session expires, instead of queueing again under the new session
	// (and losing their place).
	FailOnExpiry bool
	// Logger receives the engine's logs (default: discarded).
	Logger *slog.Logger
	// Dialer connects to a server (default net.DialTimeout); tests and
	// deployments behind proxies set it.
	Dialer func(network, address string, timeout time.Duration) (net.Conn, error)
	// Observer, if set, is told when each acquisition starts and how it
	// ends (granted, failed, cancelled), and of each lease's suspensions,
	// revocation and end (released or lost); see events.Report. It runs on
	// the loop goroutine and must return quickly.
	Observer func(events.Report)
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
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Dialer == nil {
		c.Dialer = net.DialTimeout
	}
	return c, nil
}

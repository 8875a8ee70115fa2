package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/engine/internal/zkerr"
)

// ErrNoAuth: ZooKeeper refused an operation for lack of rights (the node's
// ACL does not grant them to the session's credentials, Config.Auth), or
// refused the credentials themselves. Such a refusal is not retried: the
// acquisition, or the release, fails with it.
var ErrNoAuth = contender.ErrNoAuth

// authenticate presents every credential of Config.Auth to the session,
// once, before any acquisition can send a request. The client remembers
// a credential only once the server has accepted it, and then sends it
// again on each new connection before any queued request, so it holds
// across reconnects and expiries. A credential whose request was lost with
// a connection is not remembered: it is sent again, until ctx ends or
// Config.ConnectTimeout passes.
func (e *Engine) authenticate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ConnectTimeout)
	defer cancel()
	for _, cred := range e.cfg.Auth {
		for {
			err := e.conn.AddAuth(cred.Scheme, cred.Secret)
			if err == nil {
				break
			}
			switch {
			case zkerr.NoAuth(err):
				return fmt.Errorf("%w: credentials of scheme %q: %w", ErrNoAuth, cred.Scheme, err)
			case zkerr.Classify(err) != input.ConnLoss:
				return fmt.Errorf("turnstile: credentials of scheme %q: %w", cred.Scheme, err)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: credentials of scheme %q: %w", ErrUnreachable, cred.Scheme, context.Cause(ctx))
			case <-time.After(authRetryDelay):
			}
		}
	}
	return nil
}

// authRetryDelay spaces the attempts to present a credential whose request
// was lost with its connection: the client is reconnecting meanwhile.
const authRetryDelay = 50 * time.Millisecond

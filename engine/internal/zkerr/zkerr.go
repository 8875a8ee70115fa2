// Package zkerr reads the ZooKeeper client's errors as the core's
// outcomes (input.Outcome). It is a package of its own because the
// engine's executor, its sender of multis (engine/internal/batch) and its
// credentials and direct reads all judge errors the same way, and a
// refusal judged as one outcome here and another there would make a
// contender recover from what another gives up on.
package zkerr

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// Classify maps the client's errors to the core's outcomes.
func Classify(err error) input.Outcome {
	switch {
	case err == nil:
		return input.OK
	case errors.Is(err, zk.ErrNoNode):
		return input.NoNode
	case errors.Is(err, zk.ErrNodeExists):
		return input.NodeExists
	case errors.Is(err, zk.ErrClosing):
		return input.Closing
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrSessionExpired),
		errors.Is(err, zk.ErrSessionMoved), errors.Is(err, zk.ErrNoServer):
		return input.ConnLoss
	case isNetworkError(err):
		// The client hands a request the raw error of the socket write that
		// failed; whether the server saw the request is unknown.
		return input.ConnLoss
	case NoAuth(err):
		return input.NoAuth
	}
	return input.Refused
}

func isNetworkError(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// NoAuth reports whether err is the server's refusal for lack of rights.
func NoAuth(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed)
}

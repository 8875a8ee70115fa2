package zkerr

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

func TestClassify(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	cases := []struct {
		err  error
		want input.Outcome
	}{
		{nil, input.OK},
		{zk.ErrNoNode, input.NoNode},
		{fmt.Errorf("wrapped: %w", zk.ErrNodeExists), input.NodeExists},
		{zk.ErrConnectionClosed, input.ConnLoss},
		{zk.ErrSessionExpired, input.ConnLoss},
		{zk.ErrSessionMoved, input.ConnLoss},
		{reset, input.ConnLoss},
		{io.EOF, input.ConnLoss},
		{syscall.EPIPE, input.ConnLoss},
		{zk.ErrClosing, input.Closing},
		{zk.ErrNoAuth, input.NoAuth},
		{fmt.Errorf("wrapped: %w", zk.ErrAuthFailed), input.NoAuth},
		{zk.ErrBadArguments, input.Refused},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("Classify(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

package engine

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"unsafe"

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
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// Every queued waiter keeps one entry; keep it within its size class.
func TestEntryFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n > 256 {
		t.Fatalf("entry is %d bytes, want at most 256: every waiter pays for it", n)
	}
}

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

	"github.com/turnstile-go/turnstile/events"
)

func TestClassify(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	cases := []struct {
		err  error
		want events.Outcome
	}{
		{nil, events.OK},
		{zk.ErrNoNode, events.NoNode},
		{fmt.Errorf("wrapped: %w", zk.ErrNodeExists), events.NodeExists},
		{zk.ErrConnectionClosed, events.ConnLoss},
		{zk.ErrSessionExpired, events.ConnLoss},
		{zk.ErrSessionMoved, events.ConnLoss},
		{reset, events.ConnLoss},
		{io.EOF, events.ConnLoss},
		{syscall.EPIPE, events.ConnLoss},
		{zk.ErrClosing, events.Closing},
		{zk.ErrNoAuth, events.NoAuth},
		{fmt.Errorf("wrapped: %w", zk.ErrAuthFailed), events.NoAuth},
		{zk.ErrBadArguments, events.Refused},
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

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
)

func TestClassify(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	cases := []struct {
		err  error
		want outcome
	}{
		{nil, outOK},
		{zk.ErrNoNode, outNoNode},
		{fmt.Errorf("wrapped: %w", zk.ErrNodeExists), outNodeExists},
		{zk.ErrConnectionClosed, outConnLoss},
		{zk.ErrSessionExpired, outConnLoss},
		{zk.ErrSessionMoved, outConnLoss},
		{reset, outConnLoss},
		{io.EOF, outConnLoss},
		{syscall.EPIPE, outConnLoss},
		{zk.ErrClosing, outClosing},
		{zk.ErrNoAuth, outFailed},
		{zk.ErrBadArguments, outFailed},
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

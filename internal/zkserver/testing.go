package zkserver

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// StartT starts a standalone server for a test: t.Fatal on error, Close at
// cleanup, and the tail of the server log in the test output if the test
// failed.
func StartT(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("zkserver.Start: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("zkserver %s log tail (%s):\n%s", s.Addr(), s.LogFile(), s.LogTail(60))
		}
		if err := s.Close(); err != nil {
			t.Errorf("zkserver.Close: %v", err)
		}
	})
	return s
}

// StartTLST starts a standalone server for a test, as StartT does, that
// also serves TLS on its secure client port (SecureAddr), with throwaway
// key material made by NewTLSFiles in a temp dir of the test's; opts.TLS
// is set from them, with ZooKeeper's default of needing a client
// certificate unless opts.TLS says otherwise.
func StartTLST(t testing.TB, opts Options) (*Server, *TLSFiles) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	files, err := NewTLSFiles(ctx, t.TempDir())
	if err != nil {
		t.Fatalf("zkserver.NewTLSFiles: %v", err)
	}
	tls := files.Server
	if opts.TLS != nil {
		tls.ClientAuth = opts.TLS.ClientAuth
	}
	opts.TLS = &tls
	return StartT(t, opts), files
}

// StartEnsembleT starts an ensemble of n servers for a test: t.Fatal on
// error, Close at cleanup, and every member's log tail in the test output if
// the test failed.
func StartEnsembleT(t testing.TB, n int, opts Options) *Ensemble {
	t.Helper()
	e, err := StartEnsemble(context.Background(), n, opts)
	if err != nil {
		t.Fatalf("zkserver.StartEnsemble: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range e.Servers {
				t.Logf("zkserver member %d %s log tail (%s):\n%s", s.ID(), s.Addr(), s.LogFile(), s.LogTail(40))
			}
		}
		if err := e.Close(); err != nil {
			t.Errorf("zkserver ensemble Close: %v", err)
		}
	})
	return e
}

// Shared wraps a package's tests with one standalone server that they all
// use: call it from TestMain and hand the result to goleak.VerifyTestMain,
// so the leak check runs after the server is gone.
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(zkserver.Shared(m, &srv)) }
//
// *srv is set before the tests run. When the server cannot start, the run
// fails with the reason.
func Shared(m *testing.M, srv **Server) interface{ Run() int } {
	return SharedWith(m, srv, Options{})
}

// SharedWith is Shared with a server started with opts.
func SharedWith(m *testing.M, srv **Server, opts Options) interface{ Run() int } {
	return sharedRun{m, srv, opts}
}

type sharedRun struct {
	m    *testing.M
	srv  **Server
	opts Options
}

func (s sharedRun) Run() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := Start(ctx, s.opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start ZooKeeper:", err)
		return 1
	}
	defer srv.Close()
	*s.srv = srv
	return s.m.Run()
}

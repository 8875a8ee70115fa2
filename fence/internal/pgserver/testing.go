package pgserver

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// Shared wraps a package's tests with one server that they all use: call
// it from TestMain and hand the result to goleak.VerifyTestMain, so that
// the leak check runs after the server is gone.
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(pgserver.Shared(m, &srv)) }
func Shared(m *testing.M, srv **Server) interface{ Run() int } { return sharedRun{m, srv} }

type sharedRun struct {
	m   *testing.M
	srv **Server
}

func (s sharedRun) Run() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start PostgreSQL:", err)
		return 1
	}
	defer srv.Close()
	*s.srv = srv
	return s.m.Run()
}

// StartT starts a server for one test: t.Fatal on error, Close at cleanup,
// the log's tail in the output if the test failed.
func StartT(t testing.TB) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx)
	if err != nil {
		t.Fatalf("pgserver.Start: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("postgres log tail:\n%s", s.LogTail(40))
		}
		if err := s.Close(); err != nil {
			t.Errorf("pgserver.Close: %v", err)
		}
	})
	return s
}

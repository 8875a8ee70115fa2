package engine_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// shared is one real ZooKeeper for the tests that do not break their server.
var shared *zkserver.Server

// zkServers is where the examples find ZooKeeper: in the tests, the one
// TestMain started.
func zkServers() []string { return []string{shared.Addr()} }

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zkserver.Shared(m, &shared))
}

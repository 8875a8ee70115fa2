package engine_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// shared is one real ZooKeeper for the tests that do not break their server.
var shared *zkserver.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zkserver.Shared(m, &shared))
}

package apiwalk_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// shared is the real ZooKeeper the walk's engines use.
var shared *zkserver.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zkserver.Shared(m, &shared))
}

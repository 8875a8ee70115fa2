package zkmodel_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

// realZK is the real ZooKeeper the differential tests compare the model
// with. Its container manager never runs while the tests do (it first wakes
// a day after start), because it would reap containers at moments no
// script chose; the reaping test starts a server of its own that reaps
// every 100ms.
var realZK *zkserver.Server

// zkOptions are realZK's options, which modelConfig mirrors.
var zkOptions = zkserver.Options{
	JVMFlags: []string{"-Dznode.container.checkIntervalMs=86400000"},
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zkserver.SharedWith(m, &realZK, zkOptions))
}

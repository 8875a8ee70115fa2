package engine_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// ZooKeeper opcodes of the requests that make a lock path.
const (
	opMulti           = 14
	opCreateContainer = 19
)

// An acquisition cancelled while the request that makes its lock path is
// on the wire leaves nothing behind but a container the server reaps: one
// that had a child. ZooKeeper reaps an empty container only once it has
// had a child, so a lock path made without the lock node after it would
// stay forever.
func TestCancelledColdAcquireLeavesOnlyReapableContainer(t *testing.T) {
	ctx := context.Background()
	root := testRoot(t)
	key := root + "/k"
	raw := rawConn(t)
	mkdirs(t, raw, root)

	tap := newWireTap()
	held, let := make(chan struct{}), make(chan struct{})
	var once bool
	tap.onRequest = func(_, opcode int32, body []byte) verdict {
		// The request that makes the key: a createContainer of it, or a
		// multi that carries it. Held on the wire until the test has
		// cancelled the acquisition.
		makesKey := (opcode == opCreateContainer && requestPath(body) == key) ||
			(opcode == opMulti && bytes.Contains(body, []byte(key)))
		if makesKey && !once {
			once = true
			close(held)
			<-let
		}
		return pass
	}
	eng := startEngine(t, engine.Config{Dialer: tap.dial})

	actx, cancel := context.WithCancel(ctx)
	f := lock.NewMutex(eng, key).Acquire(actx)
	<-held
	cancel()
	if _, err := f.Wait(ctx); !errors.Is(err, context.Canceled) {
		close(let)
		t.Fatalf("acquisition: %v, want context.Canceled", err)
	}
	close(let)
	// The request's reply reaches the cancelled contender, which cleans
	// up; then nothing of the acquisition is left in flight.
	eventually(t, "the engine's cleanup", func() bool {
		return eng.Stats().Deletes > 0 && eng.InFlight() == 0
	})
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}

	ok, st, err := raw.Exists(key)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Logf("%s after the cancelled acquisition: gone (%d requests sent)", key, eng.Stats().Requests())
		return
	}
	t.Logf("%s after the cancelled acquisition: %d children, cversion %d (%d requests sent)", key, st.NumChildren, st.Cversion, eng.Stats().Requests())
	if st.NumChildren != 0 {
		t.Errorf("%s has %d children left", key, st.NumChildren)
	}
	if st.Cversion == 0 {
		t.Errorf("left behind: %s, a container that never had a child, which the server never reaps", key)
	}
}

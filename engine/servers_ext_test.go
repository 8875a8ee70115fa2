package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
)

// On a standalone server, the engine learns that its server is its own
// leader, so that every answer counts, as before the engine knew roles:
// the single-server case keeps its anchor and never renews its handshake.
func TestStandaloneServerCountsAsLeader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for !e.OnLeader() {
		select {
		case <-ctx.Done():
			t.Fatal("the standalone server never became known as the leader")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

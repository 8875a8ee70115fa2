package turnstiletest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/turnstiletest"
)

// A nil or zero Cluster, and a nil context, are reported as errors
// wrapping engine.ErrInvalidRequest; Start with a nil t, which has no error
// to return, panics with one. (Failing first: each died of a nil
// dereference or an index out of range.)
func TestNilArguments(t *testing.T) {
	ctx := context.Background()
	var nilCtx context.Context
	for name, c := range map[string]*turnstiletest.Cluster{"nil": nil, "zero": new(turnstiletest.Cluster)} {
		_, dialErr := c.Dial("tcp", "127.0.0.1:1", 0)
		_, stopErr := c.StopServer(0)
		for what, err := range map[string]error{"Close": c.Close(), "Dial": dialErr, "StopServer": stopErr,
			"ExpireSession": c.ExpireSession(ctx, 1)} {
			if !errors.Is(err, engine.ErrInvalidRequest) {
				t.Errorf("%s Cluster %s: %v", name, what, err)
			}
		}
	}
	if _, err := turnstiletest.New(nilCtx, 1); !errors.Is(err, engine.ErrInvalidRequest) {
		t.Errorf("New(nil ctx): %v", err)
	}
	defer func() {
		if err, _ := recover().(error); !errors.Is(err, engine.ErrInvalidRequest) {
			t.Errorf("Start(nil t) panicked with %v", err)
		}
	}()
	turnstiletest.Start(nil, 1)
}

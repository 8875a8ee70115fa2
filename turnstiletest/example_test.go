package turnstiletest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/turnstiletest"
)

// A holder whose session expires learns it from Lost, and another client
// gets the lock. A test of its own would call turnstiletest.Start(t, 1),
// which stops the server when the test ends; New and Close are for a
// TestMain that shares one server among a package's tests.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	zk, err := turnstiletest.New(ctx, 1)
	if err != nil {
		log.Fatal(err) // in a test: t.Skip(err) or t.Fatal(err)
	}
	defer zk.Close()

	// Dial lets ExpireSession find the engine's session.
	cfg := engine.Config{Servers: zk.Servers, Dialer: zk.Dial}
	a, err := engine.Start(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := engine.Start(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	held, err := lock.NewMutex(a, "/jobs/42").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	next := lock.NewMutex(b, "/jobs/42").Acquire(ctx)

	if err := zk.ExpireSession(ctx, a.SessionID()); err != nil {
		log.Fatal(err)
	}
	<-held.Lost()
	fmt.Println("holder lost its lease")
	l, err := next.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("the other engine holds /jobs/42")
	l.Release(ctx)
	// Output:
	// holder lost its lease
	// the other engine holds /jobs/42
}

package lock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// A semaphore of two leases: a third acquirer waits, or, with TryAcquire,
// is told at once.
func ExampleSemaphore() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	pool, err := lock.NewSemaphore(eng, "/examples/db-connections", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, _ := pool.Lock(ctx)
	b, _ := pool.Lock(ctx)
	_, err = pool.TryAcquire(ctx)
	fmt.Println("third lease would block:", errors.Is(err, engine.ErrWouldBlock))
	third := pool.Acquire(ctx)
	b.Release(ctx) // any holder's release admits the waiter
	c, err := third.Wait(ctx)
	fmt.Println("third lease after a release:", err)
	a.Release(ctx)
	c.Release(ctx)
	// Output:
	// third lease would block: true
	// third lease after a release: <nil>
}

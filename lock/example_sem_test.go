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

// A job that needs three of a pool's four slots takes them together or
// not at all: it never holds some while it waits for the rest.
func ExampleSemaphore_AcquireN() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	pool, err := lock.NewSemaphore(eng, "/examples/gpu-slots", 4)
	if err != nil {
		fmt.Println(err)
		return
	}
	small, _ := pool.Lock(ctx)
	big := pool.AcquireN(ctx, 3)
	slots, err := big.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("slots held:", len(slots.Leases()))
	fmt.Println("release:", slots.Release(ctx), small.Release(ctx))
	// Output:
	// slots held: 3
	// release: <nil> <nil>
}

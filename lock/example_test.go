package lock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Acquire returns at once; the lease arrives through the future. Thousands
// of acquisitions can be pending this way without a goroutine each.
func ExampleMutex_Acquire() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	var done sync.WaitGroup
	done.Add(1)
	lock.NewMutex(eng, "/examples/mutex-acquire").Acquire(ctx).Then(func(l *lock.Lease, err error) {
		defer done.Done()
		if err != nil {
			fmt.Println("not granted:", err)
			return
		}
		fmt.Println("granted", l.Path())
		fmt.Println("release:", l.Release(ctx))
	})
	done.Wait()
	// Output:
	// granted /examples/mutex-acquire
	// release: <nil>
}

// Lock blocks until the lock is held or the context ends; Lost tells the
// holder to stop if the session can no longer be trusted.
func ExampleMutex_Lock() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	l, err := lock.NewMutex(eng, "/examples/mutex-lock", lock.WithOwner("billing-worker-7")).Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	select {
	case <-l.Lost():
		fmt.Println("lost before the work was done")
	default:
		fmt.Println("working under token", l.Token() > 0)
	}
	fmt.Println("release:", l.Release(ctx))
	// Output:
	// working under token true
	// release: <nil>
}

// TryAcquire never waits: when someone holds the lock it fails at once with
// engine.ErrWouldBlock and leaves no node behind.
func ExampleMutex_TryAcquire() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	m := lock.NewMutex(eng, "/examples/mutex-try")
	held, err := m.TryAcquire(ctx)
	fmt.Println("first try:", err)
	_, err = m.TryAcquire(ctx)
	fmt.Println("second try would block:", errors.Is(err, engine.ErrWouldBlock))
	held.Release(ctx)
	// Output:
	// first try: <nil>
	// second try would block: true
}

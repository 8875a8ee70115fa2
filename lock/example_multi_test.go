package lock_test

import (
	"context"
	"fmt"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Two accounts locked as one for a transfer: all or none, in a canonical
// order, so a concurrent transfer the other way cannot deadlock with it.
func ExampleMultiLock() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	both, err := lock.NewMultiLock(
		lock.NewMutex(eng, "/examples/accounts/bob"),
		lock.NewMutex(eng, "/examples/accounts/alice"),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(both.Paths())
	held, err := both.Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held:", len(held.Leases()))
	fmt.Println("released:", held.Release(ctx))
	// Output:
	// [/examples/accounts/alice /examples/accounts/bob]
	// held: 2
	// released: <nil>
}

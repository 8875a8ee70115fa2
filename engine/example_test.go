package engine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Then runs a callback once the future resolves, on a goroutine of its
// own, never on the engine's loop goroutine.
func ExampleFuture_Then() {
	eng, err := engine.Start(context.Background(), engine.Config{Servers: []string{"127.0.0.1:2181"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	done := make(chan struct{})
	lock.NewMutex(eng, "/jobs/42").Acquire(context.Background()).Then(func(l *lock.Lease, err error) {
		if err == nil {
			fmt.Println("holding", l.Path())
			l.Release(context.Background())
		}
		close(done)
	})
	<-done
}

// Wait blocks for the outcome. To give up waiting for a lock, end the
// context given to Acquire: that resolves the future and takes the
// waiter's node away; a context given only to Wait stops the waiting, and
// the acquisition goes on.
func ExampleFuture_Wait() {
	eng, err := engine.Start(context.Background(), engine.Config{Servers: []string{"127.0.0.1:2181"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := lock.NewMutex(eng, "/jobs/42").Acquire(ctx).Wait(ctx)
	if err != nil {
		fmt.Println("not acquired:", err)
		return
	}
	defer l.Release(context.Background())
	fmt.Println("holding", l.Path())
}

package lock_test

import (
	"context"
	"fmt"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// The owner is explicit: here a job id. A nested call by the same owner
// takes the lock again at no cost; the node goes at the last release.
func ExampleReentrantMutex() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	m := lock.NewReentrantMutex(eng, "/examples/reentrant")
	const job = "job-42"
	outer, _ := m.Lock(ctx, job)
	inner, _ := m.Lock(ctx, job) // e.g. a helper that locks for itself
	fmt.Println("same lease:", inner == outer, "count:", m.Count(job))
	fmt.Println(m.Release(ctx, job), m.Count(job))
	fmt.Println(m.Release(ctx, job), m.Count(job))
	// Output:
	// same lease: true count: 2
	// <nil> 1
	// <nil> 0
}

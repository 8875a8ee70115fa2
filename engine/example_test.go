package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/turnstile-go/turnstile/engine"
)

// An engine serves every lock of a process on one session. Recipes (package
// lock) are the usual way in; a Request with a Decider of one's own is the
// raw form: here, whoever's node sorts first holds.
func ExampleEngine_Acquire() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{shared.Addr()}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	first := func(listed []string, self string) engine.Decision {
		children := slices.Clone(listed) // a listing is shared: never change it
		slices.SortFunc(children, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
		switch i := slices.Index(children, self); {
		case i < 0:
			return engine.Decision{Missing: true}
		case i == 0:
			return engine.Decision{Holds: true}
		default:
			return engine.Decision{Watch: children[i-1]}
		}
	}
	lease, err := eng.Acquire(ctx, engine.Request{Path: "/examples/engine", Prefix: "lock-", Decide: first}).Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held:", strings.HasPrefix(lease.Node(), "/examples/engine/_c_"))
	fmt.Println("released:", lease.Release(ctx))
	// Output:
	// held: true
	// released: <nil>
}

// Then runs a callback once the future resolves, never on the engine's
// loop goroutine.
func ExampleFuture_Then() {
	f, resolve := engine.NewPromise[string]()
	done := make(chan struct{})
	f.Then(func(v string, err error) {
		fmt.Println(v, err)
		close(done)
	})
	resolve("granted", nil)
	<-done
	// Output:
	// granted <nil>
}

package engine_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// firstInLine is a Decider of one's own: whoever's node queues first holds,
// and every other contender waits for the node just ahead of it.
//
// The engine hands it each listing of the lock path already parsed and in
// queue order: Index finds the contender's own node by binary search, and
// children that are not lock nodes are left out of Nodes. The same listing
// goes to every contender of the path, so a Decider only reads it.
func firstInLine(l *queue.Listing, self string) queue.Decision {
	i := l.Index(self)
	switch {
	case i < 0:
		return queue.Decision{Missing: true} // our node is gone: the engine creates another
	case i == 0:
		return queue.Decision{Holds: true}
	}
	return queue.Decision{Watch: l.Nodes()[i-1].Name}
}

// An engine serves every lock of a process on one session. Recipes (package
// lock) are the usual way in; a Request with a Decider of one's own is the
// raw form.
func ExampleEngine_Acquire() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	req := engine.Request{Path: "/examples/engine", Kind: queue.KindMutex, Decide: firstInLine}
	lease, err := eng.Acquire(ctx, req).Wait(ctx)
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

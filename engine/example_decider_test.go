package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// firstInLine is a Decider of one's own: whoever's node queues first holds,
// and every other contender waits for the node just ahead of it. Children
// that are not lock nodes are ignored: queue.Nodes parses every name, keeps
// the ones it can read, and returns them in queue order.
//
// The engine hands the same listing to every contender of the path, so a
// Decider reads children and never changes them.
func firstInLine(children []string, self string) engine.Decision {
	nodes, _ := queue.Nodes(children)
	i := slices.IndexFunc(nodes, func(n queue.Node) bool { return n.Name == self })
	switch {
	case i < 0:
		return engine.Decision{Missing: true} // our node is gone: the engine creates another
	case i == 0:
		return engine.Decision{Holds: true}
	}
	return engine.Decision{Watch: nodes[i-1].Name}
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

	req := engine.Request{Path: "/examples/engine", Prefix: queue.MutexPrefix, Decide: firstInLine}
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

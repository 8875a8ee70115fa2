// Command basic takes one lock, holds it briefly, releases it and prints its
// fencing token.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/examples/internal/zkenv"
	"github.com/turnstile-go/turnstile/lock"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "basic:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	servers, stopZK, err := zkenv.Servers(ctx)
	if err != nil {
		return err
	}
	defer stopZK()

	eng, err := engine.Start(ctx, engine.Config{Servers: servers})
	if err != nil {
		return err
	}
	defer eng.Close()

	m := lock.NewMutex(eng, "/examples/basic/orders-42", lock.WithOwner("examples/basic"))
	lease, err := m.Lock(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("holding %s (node %s), fencing token %d\n", m.Path(), lease.Node(), lease.Token())
	select {
	case <-time.After(100 * time.Millisecond): // the critical section
	case <-lease.Lost():
		return lease.Err()
	}
	if err := lease.Release(ctx); err != nil {
		return err
	}
	fmt.Println("released")
	return nil
}

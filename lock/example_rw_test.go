package lock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Readers share the lock; a writer waits for them and excludes everyone.
func ExampleRWMutex() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	config := lock.NewRWMutex(eng, "/examples/config")
	r1, _ := config.Reader().Lock(ctx)
	r2, err := lock.NewRWMutex(eng, "/examples/config").Reader().Lock(ctx)
	fmt.Println("two readers at once:", err == nil)
	writer := lock.NewRWMutex(eng, "/examples/config").Writer().Acquire(ctx)
	r1.Release(ctx)
	r2.Release(ctx)
	w, err := writer.Wait(ctx)
	fmt.Println("writer after the readers:", err)
	w.Release(ctx)
	// Output:
	// two readers at once: true
	// writer after the readers: <nil>
}

// A writer can downgrade to a reader without letting a queued writer in
// between: the read lease takes the write lease's place in the queue.
func ExampleRWMutex_Downgrade() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	rw := lock.NewRWMutex(eng, "/examples/downgrade")
	w, err := rw.Writer().Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	// ... write ...
	r, err := rw.Downgrade(ctx, w).Wait(ctx)
	fmt.Println("downgraded:", err)
	fmt.Println("write lease released:", w.Release(ctx))
	// ... read what was written, still excluding writers ...
	fmt.Println("read lease released:", r.Release(ctx))
	// Output:
	// downgraded: <nil>
	// write lease released: <nil>
	// read lease released: <nil>
}

// An RWMutex value is one owner: while it holds a read lease, its own
// writer is refused at once (waiting would be waiting for itself). Code
// that writes independently of this reader takes another owner with Owner;
// it waits for the reader like any other writer.
func ExampleRWMutex_Owner() {
	ctx := context.Background()
	eng, err := engine.Start(ctx, engine.Config{Servers: zkServers()})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	rw := lock.NewRWMutex(eng, "/examples/owner")
	r, err := rw.Reader().Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = rw.Writer().Lock(ctx)
	fmt.Println("upgrade refused:", errors.Is(err, lock.ErrUpgrade))

	other := rw.Owner().Writer().Acquire(ctx) // waits for the reader
	r.Release(ctx)
	w, err := other.Wait(ctx)
	fmt.Println("other owner writes after the reader:", err)
	w.Release(ctx)
	// Output:
	// upgrade refused: true
	// other owner writes after the reader: <nil>
}

package engine_test

import (
	"fmt"

	"github.com/turnstile-go/turnstile/engine"
)

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

package status_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/status"
)

// A process serves its engine's own view beside its other debug handlers;
// `turnstile process URL` reads it.
func ExampleView() {
	ctx := context.Background()
	v := status.New()
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{srv.Addr()}, Observer: v.Observe})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	v.Attach(eng)

	mux := http.NewServeMux()
	mux.Handle("/debug/turnstile", v)
	web := httptest.NewServer(mux)
	defer web.Close()

	l, err := lock.NewMutex(eng, "/examples/status").Lock(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Release(ctx)

	// The observer hears of the grant on the engine's loop, just after
	// Lock returns: ask until the view has it.
	for range 100 {
		if held := heldPaths(web.URL + "/debug/turnstile"); len(held) > 0 {
			fmt.Println("held:", held)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// held: [/examples/status]
}

// heldPaths reads the paths a process's view says it holds.
func heldPaths(url string) []string {
	resp, err := http.Get(url)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var view struct {
		Held []struct {
			Path string `json:"path"`
		} `json:"held"`
	}
	if json.NewDecoder(resp.Body).Decode(&view) != nil {
		return nil
	}
	var paths []string
	for _, h := range view.Held {
		paths = append(paths, h.Path)
	}
	return paths
}

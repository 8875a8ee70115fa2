package engine_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

func TestStartFailsWhenNoServerAnswers(t *testing.T) {
	// A port that was free a moment ago: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = engine.Start(context.Background(), engine.Config{Servers: []string{addr}, ConnectTimeout: 500 * time.Millisecond})
	if !errors.Is(err, engine.ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Start: %v, want ErrUnreachable wrapping the refused dial", err)
	}
}

func TestStartHonoursContext(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = engine.Start(ctx, engine.Config{Servers: []string{addr}})
	if !errors.Is(err, engine.ErrUnreachable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Start: %v, want ErrUnreachable and context.Canceled", err)
	}
}

func TestInvalidConfig(t *testing.T) {
	for _, cfg := range []engine.Config{
		{},
		{Servers: []string{shared.Addr()}, MaxInFlight: -1},
		{Servers: []string{shared.Addr()}, SessionTimeout: time.Second, LostMargin: 2 * time.Second},
	} {
		if _, err := engine.Start(context.Background(), cfg); !errors.Is(err, engine.ErrInvalidConfig) {
			t.Errorf("%+v: %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestCloseIsIdempotentAndAcquireAfterCloseFails(t *testing.T) {
	eng, err := engine.Start(context.Background(), engine.Config{Servers: []string{shared.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	f := eng.Acquire(context.Background(), engine.Request{Path: "/x", Kind: queue.KindMutex,
		Decide: func(*queue.Listing, string) queue.Decision { return queue.Decision{Holds: true} }})
	if _, err := f.Wait(context.Background()); !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("acquire after close: %v, want ErrClosed", err)
	}
}

func TestValidatePath(t *testing.T) {
	for _, p := range []string{"/a", "/a/b-c_d.e", "/locks/orders/42", "/ü"} {
		if err := engine.ValidatePath(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{"", "a", "/", "/a/", "//a", "/a/.", "/..", "/a\x00", "/\x7f", "/zookeeper", "/zookeeper/x", "/\xff"} {
		if err := engine.ValidatePath(p); !errors.Is(err, engine.ErrInvalidPath) {
			t.Errorf("%q: %v, want ErrInvalidPath", p, err)
		}
	}
}

// The Decider of ExampleEngine_Acquire ignores children that are not lock
// nodes, however short their names.
func TestFirstInLineIgnoresForeignChildren(t *testing.T) {
	self := "_c_0d7e5bb4-52a4-4a3b-9d4e-5b0b3c7b0e1f-lock-0000000009"
	ahead := "_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lock-0000000004"
	for _, children := range [][]string{
		{self, "config", ahead, "lock-"},
		{"", "x", ahead, self},
	} {
		if d := firstInLine(queue.NewListing(children), self); d != (queue.Decision{Watch: ahead}) {
			t.Fatalf("%q: decision %+v, want to watch %s", children, d, ahead)
		}
	}
	if d := firstInLine(queue.NewListing([]string{"x", ahead}), self); !d.Missing {
		t.Fatalf("self absent: decision %+v, want Missing", d)
	}
}

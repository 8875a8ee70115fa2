package engine_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
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
	if !errors.Is(err, engine.ErrUnreachable) {
		t.Fatalf("Start: %v, want ErrUnreachable", err)
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
	f := eng.Acquire(context.Background(), engine.Request{Path: "/x", Prefix: "lock-",
		Decide: func([]string, string) engine.Decision { return engine.Decision{Holds: true} }})
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

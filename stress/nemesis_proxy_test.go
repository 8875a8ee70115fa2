package main

import (
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDelayProxyTogglesItsDelay: through the nemesis client's proxy, bytes
// pass both ways; a chunk read while the delay is on is held for that
// delay (the proxy asks its clock to sleep for it), one read while it is
// off is not held at all. The clock is a fixed instant and a sleep that
// only records, so nothing here depends on how fast the machine is.
func TestDelayProxyTogglesItsDelay(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := newDelayProxy()
	t0 := time.Unix(1_000_000, 0)
	var mu sync.Mutex
	var slept []time.Duration
	p.now = func() time.Time { return t0 }
	p.sleep = func(d time.Duration) {
		mu.Lock()
		slept = append(slept, d)
		mu.Unlock()
	}
	sleeps := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), slept...)
	}
	defer p.Close()

	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := p.dial("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, ok := <-accepted
	if !ok {
		t.Fatal("the upstream accepted no connection")
	}
	defer server.Close()

	pass := func(from, to net.Conn, b string) {
		t.Helper()
		if _, err := from.Write([]byte(b)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(b))
		if _, err := io.ReadFull(to, got); err != nil {
			t.Fatal(err)
		}
		if string(got) != b {
			t.Fatalf("got %q through the proxy, want %q", got, b)
		}
	}
	pass(client, server, "off-up")
	pass(server, client, "off-down")
	if s := sleeps(); len(s) != 0 {
		t.Fatalf("with no delay the proxy held chunks for %v", s)
	}
	p.setDelay(300 * time.Millisecond)
	pass(client, server, "on-up")
	pass(server, client, "on-down")
	if s, want := sleeps(), []time.Duration{300 * time.Millisecond, 300 * time.Millisecond}; !slices.Equal(s, want) {
		t.Fatalf("with a 300ms delay the proxy held chunks for %v, want %v", s, want)
	}
	p.setDelay(0)
	pass(client, server, "healed-up")
	pass(server, client, "healed-down")
	if s := sleeps(); len(s) != 2 {
		t.Fatalf("after the delay was turned off the proxy still held chunks: %v", s)
	}

	// The server's end closes the engine's end, as it would without the
	// proxy.
	server.Close()
	if n, err := client.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes from a connection whose server closed", n)
	}
}

// TestDelayProxyDialFails: an address that refuses fails the dial itself,
// as it would without the proxy, so that the client's failover to the next
// server is the same with the proxy in the path.
func TestDelayProxyDialFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := newDelayProxy()
	defer p.Close()
	if c, err := p.dial("tcp", addr, 5*time.Second); err == nil {
		c.Close()
		t.Fatalf("dial of %s, where nothing listens, succeeded", addr)
	}
}

// TestNemesisClientLatencyCommands: the lines the parent writes to a
// client's stdin turn its proxy's delay on and off; a line it does not
// know changes nothing.
func TestNemesisClientLatencyCommands(t *testing.T) {
	p := newDelayProxy()
	defer p.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		line string
		want time.Duration
	}{
		{"latency 250ms", 250 * time.Millisecond},
		{"latency fast", 250 * time.Millisecond},
		{"jitter 5ms", 250 * time.Millisecond},
		{"latency 0s", 0},
		{"latency 400ms", 400 * time.Millisecond},
	} {
		nemCommands(strings.NewReader(c.line+"\n"), p, log)
		if got := time.Duration(p.delay.Load()); got != c.want {
			t.Fatalf("after %q the delay is %v, want %v", c.line, got, c.want)
		}
	}
}

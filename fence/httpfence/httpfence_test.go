package httpfence_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/fence"
	"github.com/turnstile-go/turnstile/fence/httpfence"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
)

var shared *zkserver.Server

func TestMain(m *testing.M) { goleak.VerifyTestMain(zkserver.Shared(m, &shared)) }

func startEngine(t *testing.T) *engine.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{shared.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng
}

// service is a counter that the handler sets to the request's body,
// fenced by v.
func service(t *testing.T, v *fence.Verifier, opts httpfence.Options) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var value atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			http.Error(w, "not a number", http.StatusBadRequest)
			return
		}
		value.Store(n)
		io.WriteString(w, "stored")
	})
	srv := httptest.NewServer(httpfence.Middleware(v, h, opts))
	t.Cleanup(srv.Close)
	return srv, &value
}

func post(t *testing.T, c *http.Client, url, body string, set func(*http.Request)) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		set(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTransportAndMiddleware(t *testing.T) {
	eng := startEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := &fence.Memory{}
	v, _ := fence.NewVerifier("/svc/counter", store)
	srv, value := service(t, v, httpfence.Options{})
	defer srv.Client().CloseIdleConnections()
	m := lock.NewMutex(eng, "/svc/counter")

	a, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ca := &http.Client{Transport: &httpfence.Transport{Lease: a, Base: srv.Client().Transport}}
	if code, body := post(t, ca, srv.URL, "1", nil); code != http.StatusOK || body != "stored" || value.Load() != 1 {
		t.Fatalf("holder's write: %d %q, value %d", code, body, value.Load())
	}
	stale := fence.TokenOf(a)
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Post(srv.URL, "text/plain", strings.NewReader("9")); err == nil || !errors.Is(err, engine.ErrNotHeld) {
		t.Fatalf("a released lease's request: %v, want the lease's error", err)
	}
	b, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release(ctx)
	cb := &http.Client{Transport: &httpfence.Transport{Lease: b, Base: srv.Client().Transport}}
	if code, _ := post(t, cb, srv.URL, "2", nil); code != http.StatusOK || value.Load() != 2 {
		t.Fatalf("next holder's write: %d, value %d", code, value.Load())
	}

	plain := srv.Client()
	// The first holder, stalled: its token, sent after the next holder's.
	code, body := post(t, plain, srv.URL, "3", func(r *http.Request) { httpfence.Set(r, stale, "") })
	if code != http.StatusConflict || !strings.Contains(body, strconv.FormatInt(b.Token(), 10)) || value.Load() != 2 {
		t.Fatalf("stale token: %d %q (value %d), want 409 naming %d", code, body, value.Load(), b.Token())
	}
	other := fence.Token{Path: "/svc/other", Value: b.Token() + 1}
	if code, _ := post(t, plain, srv.URL, "4", func(r *http.Request) { httpfence.Set(r, other, "") }); code != http.StatusPreconditionFailed || value.Load() != 2 {
		t.Fatalf("token of another lock: %d, want 412", code)
	}
	if code, _ := post(t, plain, srv.URL, "5", nil); code != http.StatusPreconditionRequired || value.Load() != 2 {
		t.Fatalf("no token: %d, want 428", code)
	}
	// The handler's own refusal is sent as it is, and records nothing.
	before, _ := store.Admitted(ctx, "/svc/counter")
	later := fence.Token{Path: "/svc/counter", Value: b.Token() + 100}
	if code, _ := post(t, plain, srv.URL, "x", func(r *http.Request) { httpfence.Set(r, later, "") }); code != http.StatusBadRequest {
		t.Fatalf("handler's 400: %d", code)
	}
	if after, _ := store.Admitted(ctx, "/svc/counter"); after != before {
		t.Fatalf("a failed handler recorded token %d (was %d)", after, before)
	}
}

// With Options.Holds, a request must name a node that holds the lock now.
func TestHolds(t *testing.T) {
	eng := startEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, _ := fence.NewVerifier("/svc/held", &fence.Memory{})
	srv, value := service(t, v, httpfence.Options{Holds: httpfence.HoldsOn(startEngine(t))})
	defer srv.Client().CloseIdleConnections()
	m := lock.NewMutex(eng, "/svc/held")
	a, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ca := &http.Client{Transport: &httpfence.Transport{Lease: a, Base: srv.Client().Transport}}
	if code, _ := post(t, ca, srv.URL, "1", nil); code != http.StatusOK || value.Load() != 1 {
		t.Fatalf("holder: %d", code)
	}
	tokA, nodeA := fence.TokenOf(a), a.Node()
	// A greater token, forged, without a node: the fence alone would
	// admit it.
	forged := fence.Token{Path: "/svc/held", Value: tokA.Value + 1<<12}
	if code, _ := post(t, srv.Client(), srv.URL, "2", func(r *http.Request) { httpfence.Set(r, forged, "") }); code != http.StatusPreconditionFailed || value.Load() != 1 {
		t.Fatalf("forged token without a node: %d, want 412", code)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, srv.Client(), srv.URL, "3", func(r *http.Request) { httpfence.Set(r, tokA, nodeA) }); code != http.StatusPreconditionFailed || value.Load() != 1 {
		t.Fatalf("released node: %d %q, want 412", code, body)
	}
}

package status_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/wait"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
	"github.com/turnstile-go/turnstile/status"
)

var srv *zkserver.Server

func TestMain(m *testing.M) { goleak.VerifyTestMain(zkserver.Shared(m, &srv)) }

type view struct {
	Session *struct {
		ID    string `json:"id"`
		State string `json:"state"`
	} `json:"session"`
	Held []struct {
		Path  string `json:"path"`
		Node  string `json:"node"`
		Token int64  `json:"token"`
	} `json:"held"`
	Queued []struct {
		Path string `json:"path"`
	} `json:"queued"`
	CohortWaiting int64 `json:"cohort_waiting"`
}

func get(t *testing.T, url string) view {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET %s: %s, %s", url, resp.Status, resp.Header.Get("Content-Type"))
	}
	var v view
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The view serves the engine's session, the node it holds with its token,
// the node it queued on ZooKeeper, and the acquisitions waiting in its
// cohorts, which no listing of ZooKeeper shows.
func TestViewOfAnEngine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	v := status.New()
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{srv.Addr()}, Observer: v.Observe})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	v.Attach(eng)
	other, err := engine.Start(ctx, engine.Config{Servers: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	web := httptest.NewServer(v)
	defer web.Close()

	held, err := lock.NewMutex(eng, "/status/held").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inCohort := lock.NewMutex(eng, "/status/held").Acquire(ctx)
	busy, err := lock.NewMutex(other, "/status/busy").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	onZooKeeper := lock.NewMutex(eng, "/status/busy").Acquire(ctx)

	var got view
	wait.Until(t, "the view shows the cohort's waiter and the queued acquisition", func() bool {
		got = get(t, web.URL)
		// Two wait in cohorts: one behind the held node, one behind the
		// node queued on ZooKeeper for /status/busy.
		return got.CohortWaiting == 2 && len(got.Queued) == 1
	})
	if got.Session == nil || got.Session.State != "connected" || got.Session.ID == "" {
		t.Errorf("session: %+v", got.Session)
	}
	if len(got.Held) != 1 || got.Held[0].Path != "/status/held" || got.Held[0].Node == "" || got.Held[0].Token != held.Token() {
		t.Errorf("held: %+v, want /status/held with token %d", got.Held, held.Token())
	}
	if got.Queued[0].Path != "/status/busy" {
		t.Errorf("queued: %+v", got.Queued)
	}

	busy.Release(ctx)
	l, err := onZooKeeper.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	held.Release(ctx)
	l, err = inCohort.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	wait.Until(t, "the view empty once everything is released", func() bool {
		got = get(t, web.URL)
		return len(got.Held) == 0 && len(got.Queued) == 0 && got.CohortWaiting == 0
	})

	resp, err := http.Post(web.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %s", resp.Status)
	}
}

// A zero View works as New's; a nil View observes nothing and serves 500;
// ServeHTTP without a writer or a request returns instead of panicking.
// (Failing first: each died of a nil dereference.)
func TestNilAndZeroView(t *testing.T) {
	var zero status.View
	zero.Attach(nil)
	zero.Observe(events.Report{ID: 1, Kind: events.Acquiring, Path: "/a"})
	rec := httptest.NewRecorder()
	zero.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	var s struct {
		Queued []struct{ Path string } `json:"queued"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || len(s.Queued) != 1 || s.Queued[0].Path != "/a" {
		t.Errorf("a zero View: %v, %s", err, rec.Body)
	}
	var v *status.View
	v.Attach(nil)
	v.Observe(events.Report{ID: 1, Kind: events.Acquiring})
	rec = httptest.NewRecorder()
	v.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("a nil View served %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	status.New().ServeHTTP(rec, nil)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("no request: %d", rec.Code)
	}
	status.New().ServeHTTP(nil, httptest.NewRequest(http.MethodGet, "/", nil))
}

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

var shared *zkserver.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zkserver.Shared(m, &shared))
}

// The example's ten acquisitions and ten releases, scraped over HTTP from
// its /metrics: the counters read ten, nothing is held or pending.
func TestScrapeAfterKnownWorkload(t *testing.T) {
	const n = 10
	ctx, cancel := context.WithCancel(context.Background())
	w := workload{servers: []string{shared.Addr()}, listen: "127.0.0.1:0",
		path: fmt.Sprintf("/examples/metrics/test-%d", time.Now().UnixNano()), n: n, hold: time.Millisecond}
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- w.run(ctx, func(addr string) { addrs <- addr }) }()
	var url string
	select {
	case addr := <-addrs:
		url = "http://" + addr + "/metrics"
	case err := <-done:
		t.Fatalf("the example ended before serving: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the example: %v", err)
		}
	}()

	want := fmt.Sprintf(`
# HELP turnstile_acquisitions_total Acquisitions ended, by recipe and outcome: granted, would_block (a try found the lock taken), cancelled (context ended, engine closed), failed (any other error).
# TYPE turnstile_acquisitions_total counter
turnstile_acquisitions_total{outcome="granted",recipe="mutex"} %[1]d
# HELP turnstile_leases_ended_total Leases ended, by recipe and how: released, or lost (each lost one closed its Lost() channel).
# TYPE turnstile_leases_ended_total counter
turnstile_leases_ended_total{how="released",recipe="mutex"} %[1]d
# HELP turnstile_leases_held Leases granted and not yet released or lost, by recipe.
# TYPE turnstile_leases_held gauge
turnstile_leases_held{recipe="mutex"} 0
# HELP turnstile_acquisitions_pending Acquisitions started and not yet granted, failed or cancelled: the waiters queued, by recipe. Election candidates are counted in election_candidates instead.
# TYPE turnstile_acquisitions_pending gauge
turnstile_acquisitions_pending{recipe="mutex"} 0
`, n)
	names := []string{"turnstile_acquisitions_total", "turnstile_leases_ended_total", "turnstile_leases_held", "turnstile_acquisitions_pending"}
	// The engine tells its observer of a release just after the release
	// returns: the last one may lag the workload by a moment.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := testutil.ScrapeAndCompare(url, strings.NewReader(want), names...)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// The histograms count every grant and every release.
	body := get(t, url)
	for _, line := range []string{
		fmt.Sprintf(`turnstile_acquire_duration_seconds_count{recipe="mutex"} %d`, n),
		fmt.Sprintf(`turnstile_hold_duration_seconds_count{recipe="mutex"} %d`, n),
		fmt.Sprintf(`turnstile_requests_total{op="delete"} %d`, n),
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("no %q in the scrape", line)
		}
	}
	t.Logf("scrape of %s:\n%s", url, body)
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/internal/zkserver"
)

var shared *zkserver.Server

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(zkserver.Shared(m, &shared))
}

func testPipeline(t *testing.T, inflight int) pipeline {
	return pipeline{locks: 200, paths: 20, inflight: inflight, hold: time.Millisecond,
		root: fmt.Sprintf("/examples/pipeline/%s-%d", t.Name(), time.Now().UnixNano())}
}

// Every acquisition is granted and released; with -inflight, never more
// than that many are issued and not yet released at once.
func TestPipelineBoundsInFlight(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, inflight := range []int{0, 16} {
		p := testPipeline(t, inflight)
		res, err := p.run(ctx, []string{shared.Addr()})
		if err != nil {
			t.Fatalf("inflight %d: %v", inflight, err)
		}
		if res.granted != int64(p.locks) || res.released != int64(p.locks) || res.failed != 0 {
			t.Errorf("inflight %d: %+v, want %d granted and released", inflight, res, p.locks)
		}
		if inflight > 0 && (res.peakInFlight > int64(inflight) || res.peakInFlight < 1) {
			t.Errorf("inflight %d: peak in flight %d", inflight, res.peakInFlight)
		}
	}
}

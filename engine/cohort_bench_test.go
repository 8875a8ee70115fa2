package engine

import (
	"context"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine/internal/cohort"
	"github.com/turnstile-go/turnstile/events"
	"github.com/turnstile-go/turnstile/internal/future"
	"github.com/turnstile-go/turnstile/queue"
)

// BenchmarkCohortPass is the shell's and the machine's work for one turn
// of a hot lock, on one goroutine with no server: a waiter joins the
// cohort (under a context that can end, as the stress harness's workers
// do) and the holder's release passes the lease to the waiter queued
// longest. Every MaxPasses the node goes back and the next one
// is granted, the loop played by the benchmark. What it leaves out is
// what costs the same whatever the shell does: the goroutines woken.
func BenchmarkCohortPass(b *testing.B) {
	b.Run("unobserved", func(b *testing.B) { benchCohortPass(b, nil) })
	// With an observer each caller's reports are posted to the inbox (three
	// a pass); the loop that would hand them to it is not run here.
	b.Run("observed", func(b *testing.B) { benchCohortPass(b, func(events.Report) {}) })
}

func benchCohortPass(b *testing.B, observer func(events.Report)) {
	const queued = 8
	cfg, err := Config{Servers: []string{"127.0.0.1:1"}, Cohort: CohortConfig{MaxPasses: cohort.MaxPasses, MaxHold: time.Hour},
		Observer: observer}.withDefaults()
	if err != nil {
		b.Fatal(err)
	}
	e := newEngine(cfg) // never started: the benchmark plays the loop
	e.rt.goroutine = func(func()) {}
	e.rt.afterDone = context.AfterFunc // as a started engine's
	e.trust.Handshake(e.trust.clock(), 0x10, hourMs)
	defer e.trust.stop()
	ctx, cancel := context.WithCancel(context.Background())
	_, held, req := holding(b, e, "/p", queue.KindMutex, 1)
	var waiting []*Future[*Lease]
	for range queued {
		waiting = append(waiting, e.Acquire(ctx, req))
	}
	next := uint64(2)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		waiting = append(waiting, e.Acquire(ctx, req))
		released := held.ReleaseAsync()
		if acquires, releases := commands(e); len(releases) > 0 {
			// The node went back at a bound: the loop deletes it and
			// grants the next one.
			for _, r := range releases {
				e.released(r, nil)
			}
			for _, a := range acquires {
				grantNode(b, e, a, next)
				next++
				e.cohorts.stepNode(e, &cohort.Input{Kind: cohort.Watched, Attempt: a.node}, e.cohortNode(a.node), nil, nil)
			}
		}
		if _, err := future.Await(released.impl()); err != nil {
			b.Fatal(err)
		}
		var err error
		held, _, err = waiting[0].Result()
		if err != nil || held == nil {
			b.Fatalf("the waiter queued longest: %v, %v; want it passed the lease", held, err)
		}
		waiting = waiting[1:]
	}
	b.StopTimer()
	cancel()
	for _, f := range waiting {
		<-f.Done()
	}
	held.ReleaseAsync() // the node goes back: the loop deletes it
	_, releases := commands(e)
	for _, r := range releases {
		e.released(r, nil)
	}
}

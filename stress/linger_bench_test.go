package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/lock"
)

// BenchmarkLingerArrival: how long another client's acquisition takes on
// a free lock path, and on one whose node a turnstile engine keeps after
// its release (Cohort.Linger): the arrival fires the engine's watch, which
// gives the node back. The other client is a second engine, strictly
// FIFO (go-zookeeper's Lock cannot be used: it fails on the pin node the
// engine makes on a path granted twice). On a server of its own with
// forceSync on, as the harness runs. Only the other client's acquisition
// is timed, and ns/op is the whole loop's.
//
//	go test -run '^$' -bench LingerArrival -benchtime 100x ./stress
func BenchmarkLingerArrival(b *testing.B) {
	ctx := context.Background()
	srv, eng := lingeringEngine(b, ctx)
	peer, err := engine.Start(ctx, engine.Config{Servers: []string{srv.Addr()}, Cohort: engine.CohortConfig{StrictFIFO: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer peer.Close()
	// Both paths are measured in one loop, alternately, so that a noisy
	// machine's drift falls on both alike.
	free, kept := lock.NewMutex(peer, "/linger-bench/free", lock.WithStrictFIFO()), "/linger-bench/lingering"
	own, other := lock.NewMutex(eng, kept), lock.NewMutex(peer, kept, lock.WithStrictFIFO())
	var waits [2][]time.Duration
	arrive := func(m *lock.Mutex, i int) {
		start := time.Now()
		l, err := m.Acquire(ctx).Wait(ctx)
		if err != nil {
			b.Fatal(err)
		}
		waits[i] = append(waits[i], time.Since(start))
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		l, err := own.Acquire(ctx).Wait(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // the engine's watch asked and answered: the linger settled
		arrive(other, 1)
		time.Sleep(20 * time.Millisecond)
		arrive(free, 0)
	}
	if s := eng.CohortStats(); s.Yielded == 0 {
		b.Fatalf("cohort stats %+v: no node given back to the other client", s)
	}
	for i, name := range []string{"free", "lingering"} {
		w := waits[i]
		slices.Sort(w)
		b.ReportMetric(float64(w[len(w)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(w[len(w)*99/100].Microseconds())/1000, name+"-p99-ms")
		b.ReportMetric(float64(w[len(w)-1].Microseconds())/1000, name+"-max-ms")
	}
}

// lingeringEngine starts a server of its own with forceSync on, as the
// harness runs (jvmFlags added), and an engine on it whose nodes linger
// (for an hour: the benchmark decides when another client arrives); both
// end with b.
func lingeringEngine(b *testing.B, ctx context.Context, jvmFlags ...string) (*zkserver.Server, *engine.Engine) {
	srv, err := zkserver.Start(ctx, zkserver.Options{ForceSync: true, JVMFlags: jvmFlags})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	eng, err := engine.Start(ctx, engine.Config{Servers: []string{srv.Addr()},
		Cohort: engine.CohortConfig{Linger: time.Hour, MaxHold: time.Hour}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { eng.Close() })
	return srv, eng
}

package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// FuzzConfig starts an engine with the input's options on a real
// ZooKeeper: Start refuses a configuration that cannot work with
// ErrInvalidConfig, or starts; a started engine grants a lock under its
// Root (or fails the acquisition with an error, never a panic) and
// closes, each within its bound. Durations are in milliseconds, the
// connect and close bounds capped so that an input takes seconds.
func FuzzConfig(f *testing.F) {
	f.Add(int64(0), int64(0), int64(0), 0, "", 0, int64(0), int64(0), uint8(0))
	f.Add(int64(10000), int64(2000), int64(1000), 256, "/fuzzroot", 10, int64(100), int64(5), uint8(1))
	f.Add(int64(1), int64(0), int64(0), 1, "/", 1, int64(1), int64(1), uint8(2))
	f.Add(int64(-1), int64(-1), int64(-1), -1, "rel", -1, int64(-1), int64(-1), uint8(4))
	f.Add(int64(2000), int64(2000), int64(0), 0, "/a/", 0, int64(0), int64(0), uint8(7))
	f.Add(int64(1<<40), int64(0), int64(0), 1<<30, "/zookeeper", 1<<20, int64(1<<40), int64(1<<40), uint8(0))
	root := testRoot(f)
	decide := func(l *queue.Listing, self string) queue.Decision { return l.Mutex(self) }
	f.Fuzz(func(t *testing.T, sessionMs, marginMs, closeMs int64, maxInFlight int, subroot string,
		maxPasses int, maxHoldMs, lingerMs int64, flags uint8) {
		ms := func(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
		cfg := engine.Config{
			Servers:        zkServers(),
			SessionTimeout: ms(sessionMs),
			ConnectTimeout: 2 * time.Second,
			LostMargin:     ms(marginMs),
			CloseTimeout:   min(ms(closeMs), time.Second),
			MaxInFlight:    maxInFlight,
			Root:           root + subroot, // a root of the target's own, whatever follows
			FailOnExpiry:   flags&1 != 0,
			NoPin:          flags&2 != 0,
			Cohort: engine.CohortConfig{MaxPasses: maxPasses, MaxHold: ms(maxHoldMs), Linger: min(ms(lingerMs), time.Second),
				StrictFIFO: flags&4 != 0, YieldToOthers: flags&8 != 0},
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		eng, err := engine.Start(ctx, cfg)
		if err != nil {
			if !errors.Is(err, engine.ErrInvalidConfig) && !errors.Is(err, engine.ErrUnreachable) {
				t.Fatalf("Start(%+v): %v, neither ErrInvalidConfig nor ErrUnreachable", cfg, err)
			}
			return
		}
		defer func() {
			if err := eng.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		}()
		l, err := eng.Acquire(ctx, engine.Request{Path: "/fuzzconfig", Kind: queue.KindMutex, Decide: decide, Cohort: true}).Wait(ctx)
		if err == nil {
			if l.Path() != "/fuzzconfig" {
				t.Errorf("lease on %q", l.Path())
			}
			l.Release(ctx) // a lease may be lost meanwhile under a tiny session: any outcome
		}
	})
}

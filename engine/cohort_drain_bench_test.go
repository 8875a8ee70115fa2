package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// BenchmarkCohortDrain: cohorts draining, as the stress harness's waiters
// workload does on a larger scale. drainPaths paths are each held while
// b.N waiters in all queue behind their holders (one acquisition each, a
// callback and no goroutine until it is granted); the holders release, and
// each waiter releases as soon as it is granted. An op is one waiter
// granted and released: a local pass but for the few grants of a node.
// Compare passes with `go test -run - -bench CohortDrain -benchmem
// ./engine/`, -cpuprofile for where a pass's time goes.
func BenchmarkCohortDrain(b *testing.B) {
	const drainPaths = 1000
	eng := startEngine(b, engine.Config{})
	root := testRoot(b)
	ctx := context.Background()
	mutexes := make([]*lock.Mutex, drainPaths)
	holders := make([]*lock.Lease, drainPaths)
	for k := range mutexes {
		mutexes[k] = lock.NewMutex(eng, fmt.Sprintf("%s/p%d", root, k))
		l, err := mutexes[k].Lock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		holders[k] = l
	}
	var drained sync.WaitGroup
	drained.Add(b.N)
	for i := range b.N {
		mutexes[i%drainPaths].Acquire(ctx).Then(func(l *lock.Lease, err error) {
			defer drained.Done()
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Release(ctx); err != nil {
				b.Error(err)
			}
		})
	}
	// Every waiter queued before the clock starts: the loop has taken each
	// acquisition in once a call posted after them returns.
	if _, err := mutexes[0].TryAcquire(ctx); err == nil {
		b.Fatal("a try beside a held lock was granted")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for _, h := range holders {
		if err := h.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
	drained.Wait()
	b.StopTimer()
	s := eng.CohortStats()
	b.ReportMetric(float64(s.Carriers)/float64(b.N), "nodes/op")
}

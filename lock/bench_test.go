package lock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/lock"
)

// Benchmarks of one acquire + release cycle, each goroutine on its own
// path, against the bare requests the recipe needs (create ephemeral
// sequential, getChildren, delete) on one shared connection. Compare the
// two within one run: `go test -run - -bench . -cpu 1 ./lock/`, with
// b.SetParallelism raising the goroutines per CPU.

const parallelism = 32

func BenchmarkMutexUncontended(b *testing.B) {
	eng := startEngine(b, engine.Config{})
	root := lockRoot(b)
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	b.RunParallel(func(pb *testing.PB) {
		m := lock.NewMutex(eng, fmt.Sprintf("%s/p%d", root, n.Add(1)))
		for pb.Next() {
			l, err := m.Lock(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Release(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	s := eng.Stats()
	b.ReportMetric(float64(s.Requests())/float64(b.N), "requests/op")
	b.ReportMetric(float64(s.Batched)/float64(b.N), "batched/op")
}

func BenchmarkBareRequests(b *testing.B) {
	conn := inspect(b, shared.Addr())
	root := lockRoot(b)
	if _, err := conn.Create(root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	b.RunParallel(func(pb *testing.PB) {
		path := fmt.Sprintf("%s/p%d", root, n.Add(1))
		if _, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			node, err := conn.Create(path+"/lock-", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
			if err == nil {
				_, _, err = conn.Children(path)
			}
			if err == nil {
				err = conn.Delete(node, -1)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

package engine

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/turnstile-go/turnstile/engine/internal/contender"
	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// BenchmarkListedToAllWaiters measures the loop's cost of one listing of
// n children handed to the n-1 contenders of this engine waiting on it (the
// first node is another client's holder), as after a reconnect: parsing and
// sorting the listing, and stepping every contender through its decision to
// its watch request. Requests are queued, never sent (no server).
//
//	go test -run '^$' -bench ListedToAllWaiters -benchtime 5x ./engine
func BenchmarkListedToAllWaiters(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			const path = "/bench/listed"
			children := make([]string, n)
			for i := range children {
				children[i] = nodename.Protected(nodename.NewID(), queue.KindMutex) + nodename.FormatSeq(int64(i))
			}
			waiters := slices.Clone(children[1:])
			// ZooKeeper lists children in no particular order.
			r := rand.New(rand.NewPCG(1, uint64(n)))
			r.Shuffle(n, func(i, j int) { children[i], children[j] = children[j], children[i] })

			c := bareCore(slog.New(slog.DiscardHandler))
			ids := make([]uint64, 0, len(waiters))
			for i, name := range waiters {
				en := listingEntry(uint64(i+1), path, name)
				c.contenders[en.id] = en
				ids = append(ids, en.id)
			}
			delivered := 0
			for b.Loop() {
				b.StopTimer()
				for _, en := range c.contenders {
					// Back to waiting for a listing, as after a reconnect:
					// the watch set, then fired.
					if en.c.Phase() == contender.Watching {
						en.c.Step(contender.Input{Kind: contender.WatchSet})
						en.c.Step(contender.Input{Kind: contender.WatchFired})
					}
					en.watching = ""
				}
				clear(c.watchers)
				c.commit.backlog = nil
				c.rd = ready{}
				c.listings[path] = &listing{current: ids}
				b.StartTimer()

				c.listed(input.OpDone{Op: input.OpList, Path: path, Children: children, Pzxid: 1}, contender.Input{})
				delivered += len(ids)
			}
			for _, en := range c.contenders {
				if en.c.Phase() != contender.Watching {
					b.Fatalf("a contender ended in phase %v, want watching", en.c.Phase())
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(delivered), "ns/waiter")
		})
	}
}

// mutexAtHead is the mutex recipe, as package lock has it.
func mutexAtHead(l *queue.Listing, self string) queue.Decision {
	d := l.Mutex(self)
	return queue.Decision{Holds: d.Holds, Watch: d.Watch, Missing: d.Missing, Next: d.Next}
}

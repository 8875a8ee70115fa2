package lock

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/turnstile-go/turnstile/internal/nodename"
	"github.com/turnstile-go/turnstile/queue"
)

// BenchmarkOneListingAllWaiters measures one listing of n children
// delivered to every waiter on it, by the recipes' own Deciders: the
// engine's parse of the listing, then each waiter's decision. "mutex" is n
// mutex nodes; "read" is a writer followed by n-1 readers, where each
// reader must find the last writer ahead of it.
//
//	go test -run '^$' -bench OneListingAllWaiters -benchtime 5x ./lock
func BenchmarkOneListingAllWaiters(b *testing.B) {
	for _, kind := range []string{"mutex", "read"} {
		for _, n := range []int{10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				children := make([]string, n)
				for i := range children {
					k := queue.KindMutex
					if kind == "read" {
						k = queue.KindRead
						if i == 0 {
							k = queue.KindWrite
						}
					}
					children[i] = nodename.Protected(nodename.NewID(), k) + nodename.FormatSeq(int64(i))
				}
				r := rand.New(rand.NewPCG(1, uint64(n)))
				r.Shuffle(n, func(i, j int) { children[i], children[j] = children[j], children[i] })
				decide := decideMutex
				if kind == "read" {
					decide = decideRead
				}
				delivered, holders := 0, 0
				for b.Loop() {
					l := queue.NewListing(children)
					for _, self := range children {
						if decide(l, self).Holds {
							holders++
						}
					}
					delivered += n
				}
				if holders != delivered/n {
					b.Fatalf("%d holders in %d listings, want one per listing", holders, delivered/n)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(delivered), "ns/waiter")
			})
		}
	}
}

package engine_test

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zktest"
	"github.com/turnstile-go/turnstile/lock"
)

// A closed engine keeps nothing of itself alive: no goroutine (goleak sees
// those) and no timer either. A lingering node's timer runs for up to
// Linger (an hour here), and one left armed at Close would keep the
// engine, its cohorts and its leases reachable that long: whether Close
// comes while the node lingers, or after another client's arrival sent it
// back with its timer still pending.
func TestCloseLeavesNoLingerTimer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, eng *engine.Engine, m *lock.Mutex)
	}{
		{"while the node lingers", func(*testing.T, *engine.Engine, *lock.Mutex) {}},
		{"after the node went back", func(t *testing.T, eng *engine.Engine, m *lock.Mutex) {
			raw := rawConn(t)
			other := zk.NewLock(raw, m.Path(), zk.WorldACL(zk.PermAll))
			if err := other.Lock(); err != nil { // granted once the lingering node went back
				t.Fatal(err)
			}
			if err := other.Unlock(); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ptr := func() weak.Pointer[engine.Engine] {
				eng := zktest.StartEngine(t, shared.Addr(), lingering)
				m := lock.NewMutex(eng, testRoot(t)+"/shard")
				lingerOnce(t, eng, m)
				tc.before(t, eng, m)
				if err := eng.Close(); err != nil {
					t.Fatal(err)
				}
				return weak.Make(eng)
			}()
			for deadline := time.Now().Add(10 * time.Second); ptr.Value() != nil; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the engine is still reachable 10 s after Close")
				}
				runtime.GC()
			}
		})
	}
}

package engine_test

import (
	"testing"

	"github.com/turnstile-go/turnstile/engine"
)

// The simulator's lock paths start missing, and its server reaps empty
// containers now and then, so its engines make lock paths with their
// nodes (cold keys), meet paths another engine made meanwhile, and are
// granted on a node made with its path, under the checker's watch. This
// holds the simulator to covering it: a change that stopped its runs from
// making paths would leave that argument of DESIGN.md unchecked.
func TestSimulationMakesLockPaths(t *testing.T) {
	defer engine.RunCallbacksInPlace()()
	var made, predicted, lists uint64
	for seed := uint64(1); seed <= 20; seed++ {
		r := simulate(seed, false)
		if r.report != "" {
			t.Fatal(r.report)
		}
		made += r.stats.ParentCreates
		predicted += r.stats.Predicted
		lists += r.stats.Lists
	}
	t.Logf("20 seeds: %d container creates of lock paths, %d listings saved, %d sent", made, predicted, lists)
	if made == 0 || predicted == 0 {
		t.Fatal("the simulated engines made no lock path with a node, or held none without a listing")
	}
}

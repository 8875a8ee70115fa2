// Package wait lets tests wait for state that settles asynchronously: a
// delete still in flight, a peer's node appearing, a figure an observer is
// told of just after the caller's future resolved.
package wait

import (
	"testing"
	"time"
)

// Bound is how long Until polls before it fails the test. It is generous,
// for a loaded machine: it bounds a wait, it asserts no timing.
const Bound = time.Minute

// interval is the pause between two looks.
const interval = 20 * time.Millisecond

// Until polls cond until it holds, and fails t, naming what never
// happened, once Bound has passed.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(interval)
	}
}

package core

import (
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/turnstile-go/turnstile/engine/internal/input"
)

// A lingering node is marked (its data written again, its version made
// odd) so that other clients' tries know it is held by no one. A mark
// whose write failed, refused or cut off with the connection, left the
// version even, as a held node's: the node must not linger on as if
// marked (another client's try would fail on it though nobody holds the
// lock), whether the core marks it again or gives it back.
func TestCohortLingerEndsOrMarksAgainWhenTheMarkFails(t *testing.T) {
	for _, outcome := range []input.Outcome{input.ConnLoss, input.NoAuth} {
		t.Run(outcome.String(), func(t *testing.T) {
			s, _ := newLingerScript(50 * time.Millisecond)
			var mark Op
			datadriven.RunTestFromString(t, lingeringA, func(t *testing.T, d *datadriven.TestData) string {
				s.run(t, d)
				return d.Expected
			})
			for _, r := range s.sent { // the requests sent and not answered
				for _, o := range r.ops {
					if o.Kind == input.OpMark {
						mark = o
					}
				}
			}
			if mark.Kind != input.OpMark {
				t.Fatal("the linger sent no mark")
			}
			s.c.Step(input.OpDone{Op: input.OpMark, Contender: mark.ID, Path: mark.Path, Outcome: outcome})
			s.c.EndTurn()
			rd := s.c.Ready()
			again := slices.ContainsFunc(rd.Requests, func(o Op) bool { return o.Kind == input.OpMark })
			if lingering := s.c.Lingering("/l"); len(lingering) > 0 && !again {
				t.Fatalf("mark answered %v: the node lingers on unmarked (%v), nothing sent again; the core decided:\n%s",
					outcome, lingering, s.print(rd))
			}
		})
	}
}

package queue_test

import (
	"slices"
	"testing"

	"github.com/turnstile-go/turnstile/queue"
)

func TestHolds(t *testing.T) {
	for _, tc := range []struct {
		children string
		holders  []string
	}{
		{"M1 M2 K3", []string{"M1"}},
		{"K1 M2", []string{"K1"}},
		{"R1 Q2 W3 R4", []string{"R1", "Q2"}},
		{"W1 R2 R3", []string{"W1"}},
		{"W5 R5", []string{"W5", "R5"}}, // a downgrade: one owner's pair
		{"L1 L2", nil},                  // leases: the listing alone cannot tell
		{"?junk M4", []string{"M4"}},
	} {
		children, names := listing(t, tc.children)
		nodes, _ := queue.Nodes(children)
		var got []string
		for tok, name := range names {
			n, ok := queue.Parse(name)
			if ok && queue.Holds(nodes, n) {
				got = append(got, tok)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(tc.holders))
		if !slices.Equal(got, want) {
			t.Errorf("%s: holders %v, want %v", tc.children, got, want)
		}
	}
	absent, _ := queue.Parse(nameOf(t, "M9"))
	nodes, _ := queue.Nodes([]string{nameOf(t, "M1")})
	if queue.Holds(nodes, absent) {
		t.Error("a node not in the listing holds")
	}
}

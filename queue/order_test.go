package queue_test

import (
	"slices"
	"testing"

	"github.com/turnstile-go/turnstile/queue"
)

func TestNodes(t *testing.T) {
	children, names := listing(t, "?zeta M12 K3 ?leases R7 G-1 W9 ?lock-12 Q10 P4")
	nodes, foreign := queue.Nodes(children)
	var got []string
	for _, n := range nodes {
		got = append(got, n.Name)
	}
	var want []string
	for _, tok := range []string{"G-1", "K3", "P4", "R7", "W9", "Q10", "M12"} {
		want = append(want, names[tok])
	}
	if !slices.Equal(got, want) {
		t.Errorf("Nodes order:\n got %q\nwant %q", got, want)
	}
	if wantF := []string{"zeta", "leases", "lock-12"}; !slices.Equal(foreign, wantF) {
		t.Errorf("foreign = %q, want %q (listing order)", foreign, wantF)
	}
	if nodes, foreign := queue.Nodes(nil); len(nodes) != 0 || foreign != nil {
		t.Errorf("Nodes(nil) = %v, %v", nodes, foreign)
	}
}

func TestLessAndSort(t *testing.T) {
	a := queue.Node{Name: "b", Seq: 1}
	b := queue.Node{Name: "a", Seq: 2}
	c := queue.Node{Name: "c", Seq: 2}
	neg := queue.Node{Name: "z", Seq: -5}
	for _, tc := range []struct {
		x, y queue.Node
		less bool
	}{
		{a, b, true}, {b, a, false}, // sequence first
		{b, c, true}, {c, b, false}, // then name
		{a, a, false},
		{neg, a, true}, // numerically
	} {
		if got := queue.Less(tc.x, tc.y); got != tc.less {
			t.Errorf("Less(%v, %v) = %v", tc.x, tc.y, got)
		}
	}
	nodes := []queue.Node{c, a, neg, b}
	queue.Sort(nodes)
	if want := []queue.Node{neg, a, b, c}; !slices.Equal(nodes, want) {
		t.Errorf("Sort = %v, want %v", nodes, want)
	}
	// Stable for duplicates: the tag in ID keeps its order.
	d1 := queue.Node{Name: "d", Seq: 4, ID: "1"}
	d2 := queue.Node{Name: "d", Seq: 4, ID: "2"}
	dups := []queue.Node{d1, a, d2}
	queue.Sort(dups)
	if want := []queue.Node{a, d1, d2}; !slices.Equal(dups, want) {
		t.Errorf("Sort(dups) = %v, want %v", dups, want)
	}
}

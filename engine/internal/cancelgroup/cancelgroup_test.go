package cancelgroup

import (
	"slices"
	"testing"
)

// Members join and leave in any order; the group is followed from its
// first member and let go with its last, and its end names the members
// left, in the order of their ids.
func TestSet(t *testing.T) {
	var s Set[uint64]
	if s.Join(0, 1, 1) {
		t.Fatal("group 0 followed")
	}
	if !s.Join(7, 3, 3) || s.Join(7, 1, 1) || s.Join(7, 2, 2) {
		t.Fatal("group 7 followed at another member than its first")
	}
	if s.Leave(7, 3) || s.Leave(7, 9) {
		t.Fatal("group 7 let go with members left")
	}
	if !s.Join(8, 4, 4) || s.Leave(8, 5) || !s.Leave(8, 4) {
		t.Fatal("group 8 not let go with its one member")
	}
	if _, ok := s.End(8); ok {
		t.Fatal("group 8 ended after it was let go")
	}
	s.Join(7, 5, 5)
	if ids, ok := s.End(7); !ok || !slices.Equal(ids, []uint64{1, 2, 5}) {
		t.Fatalf("group 7 ended with %v, %v; want 1 2 5", ids, ok)
	}
	if s.Leave(7, 1) {
		t.Fatal("a group ended still let go")
	}
}

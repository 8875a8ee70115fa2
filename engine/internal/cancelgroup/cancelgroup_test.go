package cancelgroup

import (
	"slices"
	"testing"
)

// Members join and leave in any order; the group is followed from its
// first member and let go with its last, and its end names the members
// left, in the order of their ids, and takes them out.
func TestSet(t *testing.T) {
	var s Set[uint64]
	var m [10]Member[uint64]
	join := func(group, id uint64) bool { return s.Join(group, id, id, &m[id]) }
	if join(0, 1) || m[1].Group() != 0 {
		t.Fatal("group 0 followed")
	}
	if !join(7, 3) || join(7, 1) || join(7, 2) {
		t.Fatal("group 7 followed at another member than its first")
	}
	if m[2].Group() != 7 {
		t.Fatalf("member 2 in group %d, want 7", m[2].Group())
	}
	if s.Leave(&m[3]) || s.Leave(&m[9]) {
		t.Fatal("group 7 let go with members left")
	}
	if !join(8, 4) || s.Leave(&m[5]) || !s.Leave(&m[4]) {
		t.Fatal("group 8 not let go with its one member")
	}
	if _, ok := s.End(8); ok {
		t.Fatal("group 8 ended after it was let go")
	}
	join(7, 5)
	join(7, 0+6)
	s.Leave(&m[6])
	if ids, ok := s.End(7); !ok || !slices.Equal(ids, []uint64{1, 2, 5}) {
		t.Fatalf("group 7 ended with %v, %v; want 1 2 5", ids, ok)
	}
	if s.Leave(&m[1]) || m[1].Group() != 0 {
		t.Fatal("a member of an ended group still in it")
	}
	// A member that came back after its group ended is in the new group
	// only, and the end orders by id whatever the joining order.
	if !join(7, 9) || join(7, 2) || join(7, 5) {
		t.Fatal("group 7 made again not followed at its first member")
	}
	if ids, _ := s.End(7); !slices.Equal(ids, []uint64{2, 5, 9}) {
		t.Fatalf("group 7 ended with %v; want 2 5 9", ids)
	}
}

// Package cancelgroup is the membership of cancel groups, for the two
// machines that end waiters when their contexts do: the core (its
// contenders) and the cohort machine (its local waiters). The waiters
// whose contexts end with one Done channel form one group, which the
// runtime names and follows once, however many wait under it: a pipeline
// issuing thousands of acquisitions under one context pays for one
// follower. The machines say when a group's first member joins (follow
// it) and its last leaves (let it go); this package keeps who is in which.
package cancelgroup

import (
	"maps"
	"slices"
)

// Set is the members of each live group, by group id; 0 names no group
// (a context that never ends). Members are ids of the machine's own.
// The zero Set is empty and ready.
type Set struct {
	groups map[uint64]members
}

// members is a live group's members: the first inline (most groups have
// one: a worker's own context), the others in a map made for them.
type members struct {
	first uint64 // 0 once it left
	rest  map[uint64]struct{}
}

func (g members) size() int {
	n := len(g.rest)
	if g.first != 0 {
		n++
	}
	return n
}

// Join adds member (not 0) to group; first reports that the group was
// empty, so that its context is to be followed from now on. Group 0 is no
// group: nothing is kept, and first is false.
func (s *Set) Join(group, member uint64) (first bool) {
	if group == 0 {
		return false
	}
	if s.groups == nil {
		s.groups = make(map[uint64]members)
	}
	g, ok := s.groups[group]
	switch {
	case !ok:
		g.first = member
	case g.first == 0:
		g.first = member
	default:
		if g.rest == nil {
			g.rest = make(map[uint64]struct{})
		}
		g.rest[member] = struct{}{}
	}
	s.groups[group] = g
	return !ok
}

// Leave takes member out of group (it was granted, or it ended); last
// reports that the group is now empty, and forgotten: its context no
// longer matters.
func (s *Set) Leave(group, member uint64) (last bool) {
	g, ok := s.groups[group]
	if !ok {
		return false
	}
	if g.first == member {
		g.first = 0
	} else {
		delete(g.rest, member)
	}
	if g.size() > 0 {
		s.groups[group] = g
		return false
	}
	delete(s.groups, group)
	return true
}

// End forgets group, whose context ended, and returns its members in the
// order of their ids (the order they were made in, where ids count up);
// ok is false for a group not live.
func (s *Set) End(group uint64) (ids []uint64, ok bool) {
	g, ok := s.groups[group]
	if !ok {
		return nil, false
	}
	delete(s.groups, group)
	ids = slices.Collect(maps.Keys(g.rest))
	if g.first != 0 {
		ids = append(ids, g.first)
	}
	slices.Sort(ids)
	return ids, true
}

// Package cancelgroup is the membership of cancel groups, for the core,
// which ends contenders when their contexts do (the cohort machine links
// its waiters' records into groups of its own instead, so that a hot
// lock's join and pass touch no member map). The waiters
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
// (a context that never ends). Members are named by ids of the machine's
// own (not 0), each with a value of its own (M: the id again, or the
// machine's record of it). The zero Set is empty and ready.
type Set[M any] struct {
	groups map[uint64]*members[M]
}

// members is a live group's members: the first inline (most groups have
// one: a worker's own context), the others in a map made for them.
type members[M any] struct {
	firstID uint64 // 0 once it left
	first   M
	rest    map[uint64]M
}

// Join adds member id, with m, to group; first reports that the group was
// empty, so that its context is to be followed from now on. Group 0 is no
// group: nothing is kept, and first is false.
func (s *Set[M]) Join(group, id uint64, m M) (first bool) {
	if group == 0 {
		return false
	}
	if s.groups == nil {
		s.groups = make(map[uint64]*members[M])
	}
	g := s.groups[group]
	switch {
	case g == nil:
		s.groups[group] = &members[M]{firstID: id, first: m}
		return true
	case g.firstID == 0:
		g.firstID, g.first = id, m
	default:
		if g.rest == nil {
			g.rest = make(map[uint64]M)
		}
		g.rest[id] = m
	}
	return false
}

// Leave takes member id out of group (it was granted, or it ended); last
// reports that the group is now empty, and forgotten: its context no
// longer matters.
func (s *Set[M]) Leave(group, id uint64) (last bool) {
	g := s.groups[group]
	if g == nil {
		return false
	}
	if g.firstID == id {
		var zero M
		g.firstID, g.first = 0, zero
	} else {
		delete(g.rest, id)
	}
	if g.firstID != 0 || len(g.rest) > 0 {
		return false
	}
	delete(s.groups, group)
	return true
}

// End forgets group, whose context ended, and returns its members' values
// in the order of their ids (the order they were made in, where ids count
// up); ok is false for a group not live.
func (s *Set[M]) End(group uint64) (ms []M, ok bool) {
	g := s.groups[group]
	if g == nil {
		return nil, false
	}
	delete(s.groups, group)
	ids := slices.Collect(maps.Keys(g.rest))
	if g.firstID != 0 {
		ids = append(ids, g.firstID)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if id == g.firstID {
			ms = append(ms, g.first)
		} else {
			ms = append(ms, g.rest[id])
		}
	}
	return ms, true
}

// Package cancelgroup is the membership of cancel groups, for the two
// machines that end waiters when their contexts do: the core (its
// contenders) and the cohort machine (its queued waiters). The waiters
// whose contexts end with one Done channel form one group, which the
// runtime names and follows once, however many wait under it: a pipeline
// issuing thousands of acquisitions under one context pays for one
// follower. The machines say when a group's first member joins (follow
// it) and its last leaves (let it go); this package keeps who is in which.
//
// A member's place is a Member kept inside the machine's own record of
// it, linked into its group's list: a join or a leave costs finding the
// group and a few pointer writes, no allocation and no map of members. A
// hot lock's waiters join and leave a group once a pass, so that is what
// it must cost.
package cancelgroup

// Set is the live groups, by group id; 0 names no group (a context that
// never ends). M is what the machine keeps with each member and gets back
// when the group ends (the member's id, or its record). The zero Set is
// empty and ready.
type Set[M any] struct {
	groups map[uint64]*list[M]
}

// Member is one member's place in its group, held in the machine's record
// of the member (which must not move while it is in a group). The zero
// Member is in no group.
type Member[M any] struct {
	id         uint64 // the machine's id of the member: End's order
	value      M
	in         *list[M] // nil: in no group
	prev, next *Member[M]
}

// list is one live group's members, in the order they joined.
type list[M any] struct {
	id         uint64
	head, tail *Member[M]
}

// Group is the id of the group m is in, 0 if none.
func (m *Member[M]) Group() uint64 {
	if m.in == nil {
		return 0
	}
	return m.in.id
}

// Join puts m, the member named id (not 0) with value, in group; first
// reports that the group was empty, so that its context is to be followed
// from now on. Group 0 is no group: m stays in none, and first is false.
// m must be in no group.
func (s *Set[M]) Join(group, id uint64, value M, m *Member[M]) (first bool) {
	if group == 0 {
		return false
	}
	if s.groups == nil {
		s.groups = make(map[uint64]*list[M])
	}
	l := s.groups[group]
	if l == nil {
		l = &list[M]{id: group}
		s.groups[group] = l
		first = true
	}
	m.id, m.value, m.in, m.prev, m.next = id, value, l, l.tail, nil
	if l.tail != nil {
		l.tail.next = m
	} else {
		l.head = m
	}
	l.tail = m
	return first
}

// Leave takes m out of its group (it was granted, or it ended); last
// reports that the group is now empty, and forgotten: its context no
// longer matters. A member in no group leaves nothing.
func (s *Set[M]) Leave(m *Member[M]) (last bool) {
	l := m.in
	if l == nil {
		return false
	}
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		l.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		l.tail = m.prev
	}
	m.clear()
	if l.head != nil {
		return false
	}
	delete(s.groups, l.id)
	return true
}

// End forgets group, whose context ended, takes its members out of it and
// returns their values in the order of their ids (the order they were
// made in, where ids count up: a member that left and came back sits
// later in the list than its id says); ok is false for a group not live.
func (s *Set[M]) End(group uint64) (values []M, ok bool) {
	l := s.groups[group]
	if l == nil {
		return nil, false
	}
	delete(s.groups, group)
	var ms []*Member[M]
	for m := l.head; m != nil; m = m.next {
		// Insertion by id: the list is nearly in order already.
		i := len(ms)
		ms = append(ms, m)
		for ; i > 0 && ms[i-1].id > m.id; i-- {
			ms[i] = ms[i-1]
		}
		ms[i] = m
	}
	values = make([]M, len(ms))
	for i, m := range ms {
		values[i] = m.value
		m.clear()
	}
	return values, true
}

func (m *Member[M]) clear() {
	var zero M
	m.value, m.in, m.prev, m.next = zero, nil, nil, nil
}

package queue

import (
	"cmp"
	"slices"
	"strings"
)

// less reports whether a queues before b: by sequence number, then by name.
//
// Sequential creates under one parent never share a number, because
// ZooKeeper bumps the parent's child version on every create. A tie means
// one of the two nodes was created without the sequential flag and borrowed
// its number: Curator 5.5 and later do that when the write-lock holder takes
// the read lock (CURATOR-621), so its read node sorts with, not after, its
// own write node and no writer queued behind can slip in between. Both nodes
// of such a pair belong to one owner, and [Read] and [Write] let them
// coexist whichever comes first, so the name tie-break decides nothing about
// safety; it only makes the order total, so that every observer of one
// listing computes the same queue.
func less(a, b Node) bool { return compare(a, b) < 0 }

func compare(a, b Node) int {
	if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// sortNodes puts nodes in queue order (by sequence number, then name). It is stable, so duplicate
// entries keep their relative order.
func sortNodes(nodes []Node) { slices.SortStableFunc(nodes, compare) }

// parseNodes parses one listing of a lock path and returns its lock nodes in
// queue order. Children that do not parse are returned in foreign, in
// listing order, so the caller can log them once; they take no part in any
// predicate.
func parseNodes(children []string) (nodes []Node, foreign []string) {
	nodes = make([]Node, 0, len(children))
	for _, c := range children {
		if n, ok := Parse(c); ok {
			nodes = append(nodes, n)
		} else if !isPin(c) {
			foreign = append(foreign, c)
		}
	}
	sortNodes(nodes)
	return nodes, foreign
}

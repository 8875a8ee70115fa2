package queue

// Holds reports whether self, one of nodes, holds its lock by the rule of
// its own kind: [Mutex] for a mutex node, [Read] for a read node, [Write]
// for a write node. A lease node is not decided by its path's listing alone
// (a semaphore's number of leases is not stored in ZooKeeper), so Holds
// reports false for it, as for a node that is not among nodes.
func Holds(nodes []Node, self Node) bool {
	switch self.Kind {
	case KindMutex:
		return Mutex(nodes, self.Name).Holds
	case KindRead:
		return Read(nodes, self.Name).Holds
	case KindWrite:
		return Write(nodes, self.Name).Holds
	}
	return false
}

// Package partition holds the tests that run a real ZooKeeper ensemble and
// its clients in network namespaces of their own (internal/netns) and cut
// links between them: what a lease's Lost() promises behind a real
// partition, and how many leases survive the loss of their server. It has
// no code of its own.
package partition

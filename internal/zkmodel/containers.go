package zkmodel

import (
	"maps"
	"slices"
	"time"
)

// The server's ContainerManager wakes every znode.container.checkIntervalMs
// (one minute by default), collects the containers that are empty and have
// had a child (cversion > 0: a container that never had one stays, unless
// znode.container.maxNeverUsedIntervalMs is set, which by default it is
// not), and submits a deleteContainer request for each, at most maxPerMinute
// a minute. The model has no timer of its own: the simulator decides when
// the manager runs and which candidates it reaps, through ReapContainer and
// ReapContainers, and so explores reaping at any point of a schedule. A
// candidate can stop being one before its deletion is applied (a child was
// created meanwhile); the server then refuses the deletion, and so does the
// model.

// ContainerCandidates returns, sorted, the containers the container manager
// would collect now.
func (m *Model) ContainerCandidates() []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(m.containers)) {
		if n := m.nodes[p]; len(n.children) == 0 && n.cversion > 0 {
			out = append(out, p)
		}
	}
	return out
}

// ReapContainer applies the deleteContainer request for p at now: a
// transaction with its own zxid, from no session. It is refused with NoNode
// if p is gone, NotEmpty if p has a child, BadVersion if p is an ephemeral
// (the server's checks); a persistent node or a container that never had a
// child is deleted if empty, as the server deletes whatever it is asked to
// (only its candidate scan is selective).
func (m *Model) ReapContainer(now time.Time, p string) Code {
	m.Tick(now)
	t := m.begin()
	defer t.commit()
	parentPath, _, ok := splitPath(p)
	n := m.nodes[p]
	switch {
	case !ok || specialPaths[p]:
		return BadArguments
	case n == nil:
		return NoNode
	case len(n.children) > 0:
		return NotEmpty
	case n.ephemeral():
		return BadVersion
	case m.nodes[parentPath] == nil:
		return NoNode
	}
	t.deleteNode(p)
	return OK
}

// ReapContainers is one run of the container manager at now: it reaps every
// candidate of ContainerCandidates, in that order, and returns those it
// deleted. A container emptied by these deletions waits for the next run,
// as on the server.
func (m *Model) ReapContainers(now time.Time) []string {
	m.Tick(now)
	var reaped []string
	for _, p := range m.ContainerCandidates() {
		if m.ReapContainer(now, p) == OK {
			reaped = append(reaped, p)
		}
	}
	return reaped
}

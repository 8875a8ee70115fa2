package lock

import (
	"context"
	"errors"
	"path"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/seam"
	"github.com/turnstile-go/turnstile/queue"
)

// Participant is one contender of a lock path, as Participants lists it.
type Participant struct {
	Node string     // the node's path, relative to the engine's Config.Root
	Kind queue.Kind // mutex, read, write or lease
	Seq  int64      // the sequence number that orders it
	// Holds reports whether the node holds the lock by its kind's rule
	// (mutex, read or write). A semaphore's lease nodes are all reported as
	// not holding: the number of leases is not stored in ZooKeeper.
	Holds  bool
	Client queue.Client // the library family its name follows
	// Data is the node's data: turnstile writes {"host","pid","owner"} as
	// JSON (see WithOwner); Curator writes the client's address by default.
	Data []byte
}

// Participants lists the contenders of the lock at path in queue order:
// holders first, then waiters in the order they will be served. Children
// that are not lock nodes are left out (the engine logs them, through
// Config.Logger, when a waiter's listing holds them). A contender that leaves while the
// list is read is left out too; the list is a snapshot, stale at once.
func Participants(ctx context.Context, eng *engine.Engine, lockPath string) ([]Participant, error) {
	children, err := seam.Children(eng, ctx, lockPath)
	if err != nil {
		return nil, err
	}
	l := queue.NewListing(children)
	var out []Participant
	for _, n := range l.Nodes() {
		p := Participant{Node: path.Join(lockPath, n.Name), Kind: n.Kind, Seq: n.Seq, Client: n.Client}
		switch n.Kind {
		case queue.KindRead:
			p.Holds = l.Read(n.Name).Holds
		case queue.KindWrite:
			p.Holds = l.Write(n.Name).Holds
		case queue.KindMutex:
			p.Holds = l.Mutex(n.Name).Holds
		}
		p.Data, err = seam.Data(eng, ctx, p.Node)
		switch {
		case errors.Is(err, engine.ErrNoNode):
			continue // it left meanwhile
		case err != nil:
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

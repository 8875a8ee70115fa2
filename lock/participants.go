package lock

import (
	"context"
	"errors"
	"log/slog"
	"path"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// Participant is one contender of a lock path, as Participants lists it.
type Participant struct {
	Node string     // the node's full path
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
// that are not lock nodes are left out. A contender that leaves while the
// list is read is left out too; the list is a snapshot, stale at once.
func Participants(ctx context.Context, eng *engine.Engine, lockPath string) ([]Participant, error) {
	children, err := eng.Children(ctx, lockPath)
	if err != nil {
		return nil, err
	}
	l := queue.NewListing(children)
	noteForeignIn(l)
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
		p.Data, err = eng.Data(ctx, p.Node)
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

// noteForeignIn logs, once each, the children of a listing that are no
// lock node (another application's, or a name no client writes): they are
// ignored. Every contender of a path is handed the same listing, so only
// the first to see it looks: a listing of thousands of waiters is not
// looked at thousands of times.
func noteForeignIn(l *queue.Listing) {
	if len(l.Foreign()) == 0 {
		return
	}
	w := weak.Make(l)
	lastNoted.Lock()
	seen := lastNoted.l == w
	lastNoted.l = w
	lastNoted.Unlock()
	if seen {
		return
	}
	for _, name := range l.Foreign() {
		noteForeign(name)
	}
}

var (
	// lastNoted is the listing noteForeignIn looked at last, held weakly so
	// that a large listing is not kept alive for this.
	lastNoted struct {
		sync.Mutex
		l weak.Pointer[queue.Listing]
	}
	foreignSeen  sync.Map // child name → struct{}
	foreignCount atomic.Int64
)

// maxForeignLogged bounds the memory spent remembering what was logged.
const maxForeignLogged = 1024

func noteForeign(name string) {
	if foreignCount.Load() >= maxForeignLogged {
		return
	}
	if _, seen := foreignSeen.LoadOrStore(name, struct{}{}); !seen {
		foreignCount.Add(1)
		slog.Warn("turnstile: ignoring a child of a lock path that is no lock node", "child", name)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/queue"
)

// lockView is one lock path as the tool reports it.
type lockView struct {
	Path   string `json:"path"` // relative to -root
	Recipe string `json:"recipe"`
	// Holders hold the lock; Waiters queue for it, in the order they will
	// be served (for a semaphore: acquirers queued on <path>/locks). For an
	// election: its leader, and its other candidates in the order they
	// will lead.
	Holders []nodeView `json:"holders"`
	Waiters []nodeView `json:"waiters"`
	// Observers are an election's observers (turnstile's Observe): they
	// never lead, and queue for nothing.
	Observers []nodeView `json:"observers,omitempty"`
}

// Recipes, as told by the nodes under a lock path.
const (
	recipeMutex     = "mutex"     // exclusive nodes only: lock- (Curator, turnstile), __lock__ (kazoo)
	recipeRW        = "rwlock"    // read and write nodes: __READ__/__WRIT__, __rlock__
	recipeSemaphore = "semaphore" // Curator's InterProcessSemaphoreV2 layout: leases/ and locks/
	recipeElection  = "election"  // latch- candidates (Curator's LeaderLatch), observer- nodes
)

// nodeView is one contender: its node and who wrote it.
type nodeView struct {
	Node string `json:"node"` // the node's path, relative to -root
	Name string `json:"name"` // its last element
	Kind string `json:"kind"` // mutex, read, write, lease, latch, observer
	Seq  int64  `json:"seq"`
	// Client is whose library made the node, as far as the node tells:
	// turnstile, curator, kazoo, go-zookeeper, or "curator|turnstile" for
	// an election candidate nothing tells apart (turnstile's follow
	// Curator's LeaderLatch on the wire, and hold the campaign's value).
	Client string `json:"client"`
	// Owner is turnstile's record of its contender (see lock.WithOwner).
	Owner *ownerRecord `json:"owner,omitempty"`
	// Data is the node's data when it is text and not turnstile's record
	// (Curator writes the client's address, kazoo the contender's
	// identifier); DataBase64 when it is not text.
	Data       string `json:"data,omitempty"`
	DataBase64 []byte `json:"data_base64,omitempty"`
	// Session is the id of the session that owns the ephemeral node.
	Session string `json:"session"`
	Czxid   int64  `json:"czxid"`
	// Since is when the node was created, so when its contender queued:
	// for a holder that waited, before its grant, which ZooKeeper does not
	// record (how long a holder has held is not known).
	Since time.Time `json:"queued_at"`
	// AgeSeconds is the node's age, how long ago Since was, when the tool
	// printed it, to the millisecond; not how long a holder has held.
	AgeSeconds float64 `json:"node_age_seconds"`

	owner int64 // the owning session, for the semaphore rule in semaphoreView
}

// ownerRecord is what turnstile writes into its lock nodes.
type ownerRecord struct {
	Host  string `json:"host"`
	PID   int    `json:"pid"`
	Owner string `json:"owner,omitempty"`
}

// parseOwner reads turnstile's record from a node's data: exactly its
// fields, a host and a pid.
func parseOwner(data []byte) (*ownerRecord, bool) {
	if len(data) == 0 || data[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var o ownerRecord
	if err := dec.Decode(&o); err != nil || o.Host == "" || o.PID <= 0 || dec.More() {
		return nil, false
	}
	return &o, true
}

// reader reads lock paths. A watching reader keeps a watch armed on every
// path it lists, and remembers the nodes it has read, so that a watch
// reads each node once.
type reader struct {
	s        *session
	watching bool
	// armed holds the watch on each path listed, until it fires. A path
	// whose watch has not fired is listed without arming another: the
	// client keeps every watch asked for until its path changes, so arming
	// one at each listing would pile them up on a quiet path.
	armed map[string]<-chan zk.Event
	known map[string]nodeView
}

func newReader(s *session, watching bool) *reader {
	return &reader{s: s, watching: watching, armed: make(map[string]<-chan zk.Event), known: make(map[string]nodeView)}
}

// children lists p's children; (nil, false) when p does not exist. A
// watching reader watches p's children, or p's creation when it is absent.
func (r *reader) children(ctx context.Context, p string) ([]string, bool, error) {
	if !r.watching {
		return r.s.children(ctx, p)
	}
	if ch, ok := r.armed[p]; ok {
		select {
		case <-ch: // fired (and closed): arm it again
			delete(r.armed, p)
		default:
			return r.s.children(ctx, p)
		}
	}
	type listing struct {
		children []string
		exists   bool
		watch    <-chan zk.Event
	}
	l, err := call(ctx, r.s, func() (listing, error) {
		children, _, watch, err := r.s.conn.ChildrenW(p)
		if errors.Is(err, zk.ErrNoNode) {
			// Created since? Then list again; else wait for it.
			exists, _, watch, err := r.s.conn.ExistsW(p)
			if err == nil && exists {
				children, _, watch, err = r.s.conn.ChildrenW(p)
				return listing{children, err == nil, watch}, err
			}
			return listing{watch: watch}, err
		}
		return listing{children, err == nil, watch}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, false, nil // deleted between the two calls: look again later
	}
	if err != nil {
		return nil, false, fmt.Errorf("list %s: %w", r.s.rel(p), err)
	}
	r.armed[p] = l.watch
	return l.children, l.exists, nil
}

// watches returns the watches armed and not yet seen to fire.
func (r *reader) watches() []<-chan zk.Event {
	var w []<-chan zk.Event
	for _, ch := range r.armed {
		w = append(w, ch)
	}
	return w
}

// node reads one lock node; false when it is gone.
func (r *reader) node(ctx context.Context, lockNode queue.Node, full string) (nodeView, bool, error) {
	if v, ok := r.known[full]; ok {
		return v, true, nil
	}
	type read struct {
		data []byte
		stat *zk.Stat
	}
	got, err := call(ctx, r.s, func() (read, error) {
		data, stat, err := r.s.conn.Get(full)
		return read{data, stat}, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nodeView{}, false, nil
	}
	if err != nil {
		return nodeView{}, false, fmt.Errorf("read %s: %w", r.s.rel(full), err)
	}
	v := nodeView{
		Node:    r.s.rel(full),
		Name:    lockNode.Name,
		Kind:    lockNode.Kind.String(),
		Seq:     lockNode.Seq,
		Client:  lockNode.Client.String(),
		Session: fmt.Sprintf("%#x", got.stat.EphemeralOwner),
		Czxid:   got.stat.Czxid,
		Since:   time.UnixMilli(got.stat.Ctime),
		owner:   got.stat.EphemeralOwner,
	}
	if o, ok := parseOwner(got.data); ok {
		v.Owner, v.Client = o, clientTurnstile
	} else if utf8.Valid(got.data) {
		v.Data = string(got.data)
	} else {
		v.DataBase64 = got.data
	}
	if r.watching {
		r.known[full] = v
	}
	return v, true, nil
}

// forget drops what the reader remembers of nodes no longer listed.
func (r *reader) forget(keep map[string]bool) {
	for full := range r.known {
		if !keep[r.s.rel(full)] {
			delete(r.known, full)
		}
	}
}

// read reads the lock at full. It reports false when full does not exist
// or holds no lock, and returns full's children either way (nil when it
// does not exist), for a walk to go on below.
func (r *reader) read(ctx context.Context, full string) (lockView, bool, []string, error) {
	children, exists, err := r.children(ctx, full)
	if err != nil || !exists {
		return lockView{}, false, nil, err
	}
	v := lockView{Path: r.s.rel(full), Holders: []nodeView{}, Waiters: []nodeView{}}
	if slices.Contains(children, "leases") {
		found, err := r.semaphore(ctx, full, &v)
		return v, found, children, err
	}
	listing := queue.NewListing(children)
	nodes := listing.Nodes()
	if len(nodes) == 0 {
		return lockView{}, false, children, nil
	}
	v.Recipe = recipeMutex
	for _, n := range nodes {
		switch n.Kind {
		case queue.KindRead, queue.KindWrite:
			v.Recipe = recipeRW
		case queue.KindLease:
			v.Recipe = recipeSemaphore // a semaphore's leases/, read on its own
		case queue.KindLatch, queue.KindObserver:
			v.Recipe = recipeElection
		}
	}
	if v.Recipe == recipeElection {
		err := r.election(ctx, full, nodes, &v)
		return v, len(v.Holders)+len(v.Waiters)+len(v.Observers) > 0, children, err
	}
	for _, n := range nodes {
		nv, ok, err := r.node(ctx, n, path.Join(full, n.Name))
		if err != nil {
			return lockView{}, false, nil, err
		}
		switch {
		case !ok:
			continue // it left meanwhile
		case holds(listing, n) || n.Kind == queue.KindLease:
			v.Holders = append(v.Holders, nv)
		default:
			v.Waiters = append(v.Waiters, nv)
		}
	}
	return v, len(v.Holders)+len(v.Waiters) > 0, children, nil
}

// election reads an election by its own rule (Curator's LeaderLatch,
// which turnstile's election follows): the lowest candidate ("latch-")
// leads and the others wait in queue order; an observer's node neither
// leads nor waits. A candidate whose node is gone before it is read is
// skipped, and the next one is the leader, as it is by then.
func (r *reader) election(ctx context.Context, full string, nodes []queue.Node, v *lockView) error {
	// Observer nodes are turnstile's own (Curator has none); a candidate
	// is turnstile's if its session observes too, else its Curator-form
	// name and free-form value cannot tell which library made it.
	observing := map[int64]bool{}
	for _, n := range nodes {
		nv, ok, err := r.node(ctx, n, path.Join(full, n.Name))
		if err != nil {
			return err
		}
		if ok && n.Kind == queue.KindObserver && nv.Client == queue.Curator.String() {
			nv.Client = clientTurnstile
			observing[nv.owner] = true
		}
		switch {
		case !ok:
			continue
		case n.Kind == queue.KindObserver:
			v.Observers = append(v.Observers, nv)
		case n.Kind != queue.KindLatch:
			continue // a lock node under an election path is no candidate
		case len(v.Holders) == 0:
			v.Holders = append(v.Holders, nv)
		default:
			v.Waiters = append(v.Waiters, nv)
		}
	}
	for _, candidates := range [][]nodeView{v.Holders, v.Waiters} {
		for i := range candidates {
			switch c := &candidates[i]; {
			case c.Client != queue.Curator.String():
			case observing[c.owner]:
				c.Client = clientTurnstile
			default:
				c.Client = clientCuratorOrTurnstile
			}
		}
	}
	return nil
}

// The clients of election nodes that the queue's naming families do not
// name.
const (
	clientTurnstile          = "turnstile"
	clientCuratorOrTurnstile = "curator|turnstile"
)

// semaphore reads a semaphore on Curator's InterProcessSemaphoreV2 layout,
// which turnstile's Semaphore shares: a lease node per lease under
// <path>/leases, and a mutex at <path>/locks that an acquirer holds while
// it creates its lease node and waits for a free lease.
//
// The recipe's rule: a lease node is only ever created by the acquirer
// that holds the mutex, after every other lease node still there, and it
// holds once it is among the first N (turnstile; Curator: once there are
// at most N). So every lease node holds but, at most, the newest, and
// that one only when the mutex's holder is still acquiring and made it:
// the same session, after it took the mutex. That one may still wait for
// a free lease (the number of leases is not stored in ZooKeeper), and is
// shown among the waiters, in place of its mutex node. Older lease nodes
// of the same session (a process running several acquirers) hold.
//
// One moment stays ambiguous: an acquirer was granted its lease and let
// the mutex go, and the next holder of the mutex, of the same session,
// has not made its lease node yet. The newest lease node then looks like
// the new holder's, but ZooKeeper shows that the mutex changed hands after
// it was made: the last change under locks/ (its pzxid) is newer than the
// lease node and than every mutex node there, so it was a deletion. Such a
// lease node holds. (A waiter of the mutex that gives up at that moment
// looks the same, and its holder's waiting lease is shown as held.)
func (r *reader) semaphore(ctx context.Context, full string, v *lockView) (bool, error) {
	v.Recipe = recipeSemaphore
	leases, err := r.lockNodes(ctx, path.Join(full, "leases"))
	if err != nil {
		return false, err
	}
	acquirers, err := r.lockNodes(ctx, path.Join(full, "locks"))
	if err != nil {
		return false, err
	}
	if n := len(leases); n > 0 && len(acquirers) > 0 {
		guard, newest := acquirers[0], leases[n-1]
		if newest.owner == guard.owner && newest.Czxid > guard.Czxid {
			handedOn, err := r.deletedSince(ctx, path.Join(full, "locks"), newest.Czxid, acquirers)
			if err != nil {
				return false, err
			}
			if handedOn {
				v.Holders = append(v.Holders, leases...)
				v.Waiters = append(v.Waiters, acquirers...)
				return true, nil
			}
			v.Holders = append(v.Holders, leases[:n-1]...)
			v.Waiters = append(v.Waiters, newest)
			v.Waiters = append(v.Waiters, acquirers[1:]...)
			return true, nil
		}
	}
	v.Holders = append(v.Holders, leases...)
	v.Waiters = append(v.Waiters, acquirers...)
	return len(v.Holders)+len(v.Waiters) > 0, nil
}

// lockNodes reads the lock nodes under p in queue order.
func (r *reader) lockNodes(ctx context.Context, p string) ([]nodeView, error) {
	children, _, err := r.children(ctx, p)
	if err != nil {
		return nil, err
	}
	nodes := queue.NewListing(children).Nodes()
	var out []nodeView
	for _, n := range nodes {
		nv, ok, err := r.node(ctx, n, path.Join(p, n.Name))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, nv)
		}
	}
	return out, nil
}

// deletedSince reports whether the last change among p's children, whose
// nodes now are nodes, was a deletion made after zxid.
func (r *reader) deletedSince(ctx context.Context, p string, zxid int64, nodes []nodeView) (bool, error) {
	stat, err := call(ctx, r.s, func() (*zk.Stat, error) {
		_, stat, err := r.s.conn.Exists(p)
		return stat, err
	})
	if err != nil {
		return false, fmt.Errorf("read %s: %w", r.s.rel(p), err)
	}
	if stat == nil || stat.Pzxid <= zxid {
		return false, nil
	}
	for _, n := range nodes {
		if n.Czxid >= stat.Pzxid {
			return false, nil // the last change was this node's creation
		}
	}
	return true, nil
}

// holds reports whether n, one of l's nodes, holds its lock by the rule of
// its own kind. A lease node is not decided by its path's listing alone (a
// semaphore's number of leases is not stored in ZooKeeper): false.
func holds(l *queue.Listing, n queue.Node) bool {
	switch n.Kind {
	case queue.KindMutex:
		return l.Mutex(n.Name).Holds
	case queue.KindRead:
		return l.Read(n.Name).Holds
	case queue.KindWrite:
		return l.Write(n.Name).Holds
	}
	return false
}

package election

import (
	"bytes"
	"context"
	"errors"
	"path"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// Observe returns a channel that receives the election's leaders, each
// change in the order it happened, starting with the current leader if
// there is one; a leader that proclaims a new value (Leadership.Proclaim)
// is received again, with it. It is closed when ctx ends or the engine
// closes.
//
// The channel holds one leader: an observer that falls behind finds the
// latest when it reads again, never one older than a leader it has already
// received. A leader whose term began and ended between two looks at the
// election, or whose node is gone before its value could be read, is not
// reported; every leader that is reported is reported once per value, in
// order.
//
// Every observer of one Election shares one watch, kept by the engine like
// a waiting contender: one node of the engine under the election path
// ("_c_<uuid>-observer-<seq>", which no candidate, Go or Java, counts);
// per change of leader or of its value, one listing, one watch and one
// read of the leader's value, which sets a data watch on the leader's node
// in the same request (so no Proclaim is missed); and one goroutine that
// waits for that data watch while the leader leads. The watch ends with
// its last observer.
//
// On a nil Election (or one New did not make), or with a nil ctx, there is
// nothing to follow: the channel is closed at once, as on a nil engine.
// Observe has no error to return, and a panic there would end the program
// for a mistake that Leader and Campaign report as an error wrapping
// engine.ErrInvalidRequest.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
	if e.unmade() || ctx == nil {
		ch := make(chan Leader)
		close(ch)
		return ch
	}
	return e.obs.subscribe(ctx)
}

// maxPending bounds the leaders seen but not yet read. Terms as short as a
// read are rare; when they pile up anyway, the oldest are the ones most
// likely gone already, and they are dropped first.
const maxPending = 64

// observers is an Election's observers and the one watch that serves them.
type observers struct {
	el *Election

	mu    sync.Mutex
	subs  map[*subscriber]struct{}
	watch *watch // the running watch; nil when no one observes
	// last is the last leader published to the current observers, kept
	// across a restart of the watch so that none is told twice.
	last Leader
}

// watch is one run of the engine contender that watches the election path,
// from the first observer to the last (or to an expiry that ended it).
type watch struct {
	ctx  context.Context
	stop context.CancelFunc // removes the contender and its node

	seen     string          // the last leader the contender saw
	pending  []string        // leaders seen and not yet read (or read again), oldest first
	fetching bool            // a goroutine is reading pending
	armed    map[string]bool // leaders whose data watch a goroutine follows
}

type subscriber struct {
	ch   chan Leader
	stop func() bool // ends the AfterFunc on the subscriber's context
}

func (o *observers) subscribe(ctx context.Context) <-chan Leader {
	s := &subscriber{ch: make(chan Leader, 1)}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.subs == nil {
		o.subs = make(map[*subscriber]struct{})
	}
	o.subs[s] = struct{}{}
	switch {
	case o.watch == nil:
		o.start()
	case o.last.Node != "":
		s.offer(o.last)
	}
	// Called at once, on its own goroutine, if ctx is done already.
	s.stop = o.el.opts.rt.AfterFunc(ctx, func() { o.unsubscribe(s) })
	return s.ch
}

// offer puts l in the subscriber's one-leader buffer, in place of an
// older leader it has not read yet. Called with observers.mu held, so that
// offers and the channel's closing never race.
func (s *subscriber) offer(l Leader) {
	select {
	case s.ch <- l:
		return
	default:
	}
	select {
	case <-s.ch:
	default:
	}
	select {
	case s.ch <- l:
	default:
	}
}

func (o *observers) unsubscribe(s *subscriber) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.subs[s]; !ok {
		return
	}
	o.drop(s)
	if len(o.subs) == 0 && o.watch != nil {
		o.watch.stop()
		o.watch, o.last = nil, Leader{}
	}
}

func (o *observers) drop(s *subscriber) {
	delete(o.subs, s)
	s.stop()
	close(s.ch)
}

// start runs a new watch: an engine contender under the election path that
// never holds, whose Decider learns each listing's leader.
func (o *observers) start() {
	ctx, cancel := context.WithCancel(context.Background())
	w := &watch{ctx: ctx, stop: cancel, armed: make(map[string]bool)}
	o.watch = w
	req := engine.Request{
		Path: o.el.path, Kind: queue.KindObserver,
		Decide: func(l *queue.Listing, _ string) queue.Decision {
			leader, d := leaderOf(l.Nodes())
			o.saw(w, leader)
			return d
		},
	}
	o.el.eng.Acquire(ctx, req).Then(func(l *engine.Lease, err error) { o.ended(w, l, err) })
}

// ended: the watch's contender is over. Unless its observers stopped it,
// the engine closed or failed it; after an expiry (Config.FailOnExpiry)
// the watch starts again, anything else ends every observer.
func (o *observers) ended(w *watch, l *engine.Lease, err error) {
	if l != nil {
		l.ReleaseAsync() // an observer's Decider never holds; should one, give it back
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.watch != w {
		return
	}
	w.stop()
	o.watch = nil
	if errors.Is(err, engine.ErrSessionExpired) && len(o.subs) > 0 {
		o.start()
		return
	}
	for s := range o.subs {
		o.drop(s)
	}
	o.last = Leader{}
}

// saw is told, on the engine's loop, the leader of each listing the watch
// is given. Listings come in the order the server answered them, so a
// leader seen is newer than every leader seen before. A listing with the
// same leader follows its node's watch, which fires on the node's data
// changing (a Proclaim) as well as on its deletion: its value is read
// again.
func (o *observers) saw(w *watch, leader string) {
	o.mu.Lock()
	if o.watch != w || leader == "" || leader == w.seen && w.armed[leader] {
		// A change of the leader's value is followed by its own data
		// watch (see follow).
		o.mu.Unlock()
		return
	}
	w.seen = leader
	o.read(w, leader)
}

// changed is told that this engine proclaimed a new value for node, the
// node (its full path) of one of its Leaderships. An observer on the same
// engine watches that node without a watch on the server (the engine tells
// it only of the node's deletion), so the new value is read from here.
func (o *observers) changed(node string) {
	leader := path.Base(node)
	o.mu.Lock()
	if w := o.watch; w != nil && w.seen == leader && path.Dir(node) == o.el.path {
		o.read(w, leader)
		return
	}
	o.mu.Unlock()
}

// read queues leader's value to be read and published; called with o.mu
// held, which it releases. Every read of one watch is made by one
// goroutine at a time, in order, so a value published is never older than
// one published before.
func (o *observers) read(w *watch, leader string) {
	if n := len(w.pending); n > 0 && w.pending[n-1] == leader {
		o.mu.Unlock()
		return // a read of it is queued already, and will see the latest
	}
	if len(w.pending) == maxPending {
		w.pending = append(w.pending[:0], w.pending[1:]...)
	}
	w.pending = append(w.pending, leader)
	start := !w.fetching
	w.fetching = true
	o.mu.Unlock()
	if start {
		// The value is a read, which must not wait on the loop. Started
		// without the lock, which fetch takes: a simulator's Runtime.Go
		// runs it at once, on this goroutine.
		o.el.opts.rt.Go(func() { o.fetch(w) })
	}
}

// readValue reads node's value and, where the runtime can, sets a watch
// on it in the same request: then a change after the read cannot be
// missed, as it could be between a read and a watch set apart.
func (o *observers) readValue(w *watch, node string) ([]byte, <-chan zk.Event, error) {
	if dataW := o.el.opts.rt.DataW; dataW != nil {
		return dataW(w.ctx, node)
	}
	value, err := o.el.opts.rt.Data(w.ctx, node)
	return value, nil, err
}

// follow waits for the data watch on the leader name to fire, then has its
// value read again (which sets the next watch), while name still leads.
// One goroutine per watched node; it ends when the watch fires, which it
// does on the node's deletion and when the session or the client ends,
// or when the watch stops.
func (o *observers) follow(w *watch, name string, changed <-chan zk.Event) {
	select {
	case <-changed:
	case <-w.ctx.Done():
	}
	o.mu.Lock()
	delete(w.armed, name)
	if o.watch == w && w.seen == name && w.ctx.Err() == nil {
		o.read(w, name)
		return
	}
	o.mu.Unlock()
}

// fetch reads the value of each pending leader, oldest first, and
// publishes those still there.
func (o *observers) fetch(w *watch) {
	for {
		o.mu.Lock()
		if o.watch != w || len(w.pending) == 0 {
			w.fetching = false
			o.mu.Unlock()
			return
		}
		name := w.pending[0]
		w.pending = w.pending[1:]
		o.mu.Unlock()

		node := o.el.path + "/" + name
		value, changed, err := o.readValue(w, node)

		o.mu.Lock()
		if changed != nil && o.watch == w && !w.armed[name] {
			w.armed[name] = true
			go o.follow(w, name, changed)
		}
		switch {
		case o.watch != w:
		case err == nil && (node != o.last.Node || !bytes.Equal(value, o.last.Value)):
			o.last = Leader{Node: node, Value: value}
			for s := range o.subs {
				s.offer(o.last)
			}
		case err == nil:
			// Published already, with this value: before the watch
			// started again, or a listing that followed no change.
		case errors.Is(err, engine.ErrNoNode):
			// Its term ended before it could be read: there is a newer
			// leader, or none, and the watch will see which.
		case w.seen == name:
			// Not read (the connection dropped, say): the listing the
			// engine makes once connected again shows it anew.
			w.seen = ""
		}
		o.mu.Unlock()
	}
}

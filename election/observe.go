package election

import (
	"context"
	"errors"
	"sync"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// Observe returns a channel that receives the election's leaders, each
// change in the order it happened, starting with the current leader if
// there is one. It is closed when ctx ends or the engine closes.
//
// The channel holds one leader: an observer that falls behind finds the
// latest when it reads again, never one older than a leader it has already
// received. A leader whose term began and ended between two looks at the
// election, or whose node is gone before its value could be read, is not
// reported; every leader that is reported is reported once, in order.
//
// Every observer of one Election shares one watch, kept by the engine like
// a waiting contender: it costs no goroutine, one node of the engine under
// the election path ("_c_<uuid>-observer-<seq>", which no candidate, Go or
// Java, counts), and, per change of leader, one listing, one watch and one
// read of the new leader's value. The watch ends with its last observer.
func (e *Election) Observe(ctx context.Context) <-chan Leader {
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

	seen     string   // the last leader the contender saw
	pending  []string // leaders seen and not yet read, oldest first
	fetching bool     // a goroutine is reading pending
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
	w := &watch{ctx: ctx, stop: cancel}
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
// leader seen is newer than every leader seen before.
func (o *observers) saw(w *watch, leader string) {
	o.mu.Lock()
	if o.watch != w || leader == "" || leader == w.seen {
		o.mu.Unlock()
		return
	}
	w.seen = leader
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
		value, err := o.el.opts.rt.Data(w.ctx, node)

		o.mu.Lock()
		switch {
		case o.watch != w:
		case err == nil && node != o.last.Node:
			o.last = Leader{Node: node, Value: value}
			for s := range o.subs {
				s.offer(o.last)
			}
		case err == nil:
			// Published already, before the watch started again.
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

package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Lease is a granted lock: proof, while it is neither released nor lost,
// that its holder is the one the recipe admits. A nil *Lease (a failed
// acquisition's) is lost at once, and its Err and Release report
// ErrInvalidRequest; neither it nor a zero Lease is held.
type Lease struct {
	eng   *Engine
	id    uint64
	path  string // the lock path on the server, under Config.Root
	node  string // the node's path on the server
	token int64  // the fencing token; see Token
	// nodeLease, for a lease of a cohort's member, is the lease of the
	// cohort's node it holds (see the core's cohorts.go); nil for any other.
	nodeLease *Lease

	releasing atomic.Bool

	mu        sync.Mutex
	lost      signal
	lostErr   error
	suspended signal // fired while the session is disconnected
	revoked   signal
	// ended is why the lease ended (its loss, or its release), nil while it
	// is held. ctx, made on the first call to Context, is cancelled with it
	// as the cause: most leases are never asked for a context, and cost
	// none.
	ended  error
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Path is the lock path, as given to Acquire: relative to Config.Root.
func (l *Lease) Path() string { l = l.or(); return l.eng.or().namespacePath(l.path) }

// Engine is the engine whose session holds the lease.
func (l *Lease) Engine() *Engine {
	if l == nil {
		return nil
	}
	return l.eng
}

// Node is the path of the lease's own znode, relative to Config.Root like
// Path: Path, a slash and the node's name. lock.Revoke and the engine's
// Data and SetData take it as it is.
func (l *Lease) Node() string { l = l.or(); return l.eng.or().namespacePath(l.node) }

// Token is the fencing token of this grant. Successive grants of one lock
// path carry strictly increasing tokens, across sessions, reconnects and
// server restarts, so a resource guarded by the lock can refuse a writer
// whose token is older than one it has seen.
//
// It costs no request: it is a zxid shifted left by 12 bits, with a
// pass number in the low bits,
//
//	token = zxid<<12 | pass
//
// The zxid is that of the node's grant. A grant decided by a listing takes
// the lock node's pzxid from that listing's reply: the listing that grants
// the next holder cannot contain this holder's node, so it was answered
// after that node's deletion, whose zxid exceeds any pzxid this holder saw.
// A grant handed over inside one engine (the holder ahead released through
// the same engine, and its deletion's reply is what admits the next one)
// takes the greatest zxid the client has read in any reply header by then:
// at least the deletion's, so above the previous holder's token, and below
// the zxid of this holder's own deletion, so below the next holder's.
//
// pass is 0 for a grant of the node. A lease passed locally inside a
// cohort (see CohortConfig) keeps the node, and its zxid, and takes the
// next pass number, 1 to 4095: above every earlier holder of
// the node, and below any later grant, whose zxid is at least that of the
// node's deletion. The encoding holds zxids below 2^51:
// a ZooKeeper epoch (the zxid's high 32 bits, one more at each leader
// election) below 2^19, 524,288.
func (l *Lease) Token() int64 { return l.or().token }

// TrustedUntil is the time by which Lost() will have closed if the lease
// is to be lost, with nothing more heard from the server: the engine's
// trust deadline (see Lost). A write the lease guards that must end while
// the lease is trusted has until then; read it just before the write, as
// every answer of the server (a ping at least every third of the session
// timeout) moves it later. After Lost() has closed, the server may expire
// the session, and grant the lock to another client, no sooner than
// Engine.LostMargin later. It is the zero Time once the lease is lost or
// ended, and while the engine does not trust its session.
//
// Like Token, it costs no request. The Time carries a monotonic clock
// reading, so time.Until measures it on the monotonic clock.
func (l *Lease) TrustedUntil() time.Time {
	if l = l.or(); l.unmade() || l.eng.unstarted() {
		return time.Time{}
	}
	l.mu.Lock()
	over := l.lost.Fired() || l.ended != nil
	l.mu.Unlock()
	if over {
		return time.Time{}
	}
	return l.eng.watchdog.until(time.Now())
}

// Lost is closed when the lease can no longer be trusted: the session
// expired, or the server may expire it before the engine hears from it
// again, or the engine closed. For the second, the engine keeps a deadline
// on the monotonic clock: the send time of the latest request (ping and
// connect handshake included) that a server answered, plus the session
// timeout the server granted, less Config.LostMargin scaled to that
// timeout. A timer of its own closes Lost at that deadline, whatever the
// engine's loop is doing, so before the server can expire the session and
// grant the lock to another client. The holder must stop touching the
// guarded resource at once.
func (l *Lease) Lost() <-chan struct{} {
	l = l.or()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost.Done()
}

// Err is nil while the lease is not lost, and then why it was lost (errors.Is
// finds ErrLost, and ErrSessionExpired or ErrClosed where they are the cause).
func (l *Lease) Err() error {
	l = l.or()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

// Suspended is closed while the connection to ZooKeeper is down and the
// lease is not yet lost. After a reconnect a new, open channel takes its
// place, so call Suspended again to wait for the next suspension.
//
// A lease passed inside a cohort is suspended with the node it holds.
func (l *Lease) Suspended() <-chan struct{} {
	l = l.or()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.suspended.Done()
}

// Context returns a context that is cancelled when the lease ends, for the
// work the lease guards (database calls, RPCs): when it is lost, with
// Err() as the cause (errors.Is finds ErrLost), and when its release has
// completed, with ErrNotHeld as the cause, or the release's error when the
// server refused the deletion. context.Cause reads the cause; ctx.Err() is
// context.Canceled either way. It carries no deadline and no values, and
// is the same context on every call.
//
// A loss cancels it at the moment Lost closes, from the engine's watchdog,
// whatever the engine's loop is doing.
func (l *Lease) Context() context.Context {
	l = l.or()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(context.Background())
		if l.ended != nil {
			l.cancel(l.ended)
		}
	}
	return l.ctx
}

// end records that the lease ended, because of cause (nil: it was
// released), and cancels its context; only the first call counts.
func (l *Lease) end(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked(cause)
}

func (l *Lease) endLocked(cause error) {
	if l.ended != nil {
		return
	}
	if cause == nil {
		cause = ErrNotHeld
	}
	l.ended = cause
	if l.cancel != nil {
		l.cancel(cause)
	}
}

// Release gives the lock up and deletes the lease's node. It returns once
// the node is deleted, or with context.Cause(ctx) when ctx ends first (the
// deletion goes on regardless). A lost lease reports its loss (ErrLost). A
// second call returns ErrNotHeld and does nothing. A deletion the server
// refuses for lack of rights fails with ErrNoAuth; the node then stays
// until the session ends. A nil ctx is refused before anything is sent.
func (l *Lease) Release(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	_, err := l.ReleaseAsync().Wait(ctx)
	return err
}

// Held reports whether the lease is still held: neither released (or being
// released) nor lost.
func (l *Lease) Held() bool {
	l = l.or()
	if l.eng == nil || l.releasing.Load() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr == nil && l.ended == nil
}

// ReleaseAsync starts releasing and returns a future of the outcome, for
// callers that must not block. A second call resolves with ErrNotHeld.
func (l *Lease) ReleaseAsync() *Future[struct{}] {
	if l.unmade() {
		return resolvedFuture(struct{}{}, errNilLease)
	}
	if !l.releasing.CompareAndSwap(false, true) {
		return resolvedFuture(struct{}{}, ErrNotHeld)
	}
	r := &releaseCall{}
	r.cmd = releaseCmd{lease: l, fut: &r.fut}
	return l.eng.release(&r.cmd)
}

// releaseCall is a release's command and its future, made together: one
// allocation for each release, which on a cohort's passes is one a pass.
type releaseCall struct {
	cmd releaseCmd
	fut Future[struct{}]
}

// Revoked is closed when someone asked this holder to let go (lock.Revoke,
// or Curator's Revoker). Only revocable leases are told; letting go is up to
// the holder. It never closes for a lease acquired without revocation.
func (l *Lease) Revoked() <-chan struct{} {
	l = l.or()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.revoked.Done()
}

func (l *Lease) markRevoked() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.revoked.Fire()
}

func (l *Lease) revokeRequested() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.revoked.Fired()
}

func (l *Lease) markLost(err error) {
	l.mu.Lock()
	if l.lostErr != nil {
		l.mu.Unlock()
		return
	}
	l.lostErr = &lostError{cause: err}
	// The context first: whoever sees Lost closed sees it cancelled.
	l.endLocked(l.lostErr)
	l.lost.Fire()
	l.mu.Unlock()
}

func (l *Lease) setSuspended(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case on:
		l.suspended.Fire()
	case l.suspended.Fired():
		l.suspended = signal{} // a new, open one for the next suspension
	}
}

package contender

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/queue"
)

// Scripted, deterministic tests of the contender state machine: no server,
// no goroutines, no clock. Each feeds inputs and checks the exact effects.

// seqDecide is a minimal mutex recipe for these tests: the first node in
// queue order holds, a waiter watches its predecessor.
func seqDecide(l *queue.Listing, self string) queue.Decision {
	i := l.Index(self)
	switch {
	case i < 0:
		return queue.Decision{Missing: true}
	case i == 0:
		return queue.Decision{Holds: true}
	}
	return queue.Decision{Watch: l.Nodes()[i-1].Name}
}

type script struct {
	t *testing.T
	c *Machine
}

// newScript is a machine of /locks/a on a connected, trusted session,
// whose protected ids count up from 1, as opts change its Config.
func newScript(t *testing.T, opts ...func(*Config)) *script {
	n := 0
	ids := func() string {
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}
	cfg := Config{LockPath: "/locks/a", Prefix: "lock-", Decide: seqDecide, NewID: ids, Connected: true}
	for _, o := range opts {
		o(&cfg)
	}
	c := New(cfg)
	return &script{t: t, c: &c}
}

// Options of newScript.
func failOnExpiry(c *Config) { c.FailOnExpiry = true }
func tryOnly(c *Config)      { c.TryOnly = true }

func deciding(d Decider) func(*Config)   { return func(c *Config) { c.Decide = d } }
func borrowing(seq string) func(*Config) { return func(c *Config) { c.Seq = seq } }

// node is the name the server would give the n-th id's node with sequence seq.
func node(n, seq int) string {
	return fmt.Sprintf("_c_00000000-0000-4000-8000-%012d-lock-%010d", n, seq)
}

func other(seq int) string {
	return fmt.Sprintf("_c_ffffffff-0000-4000-8000-000000000000-lock-%010d", seq)
}

func (s *script) step(in Input, want ...Effect) {
	s.t.Helper()
	got := s.c.Step(in)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		s.t.Fatalf("after %v in phase %v:\n got  %v\n want %v", in.Kind, s.c.phase, got, want)
	}
}

func (s *script) phase(want Phase) {
	s.t.Helper()
	if s.c.phase != want {
		s.t.Fatalf("phase %v, want %v", s.c.phase, want)
	}
}

func create(n int) Effect {
	return Effect{Kind: Create, Path: "/locks/a/_c_00000000-0000-4000-8000-" + fmt.Sprintf("%012d", n) + "-lock-"}
}

var (
	list = Effect{Kind: List, Path: "/locks/a"}
	done = Effect{Kind: Forget}
	park = Effect{Kind: Park}
)

func del(name string) Effect   { return Effect{Kind: Delete, Path: "/locks/a/" + name} }
func watch(name string) Effect { return Effect{Kind: Watch, Path: "/locks/a/" + name} }
func grant(tok int64) Effect   { return Effect{Kind: Grant, Token: tok} }
func fail(err error) Effect    { return Effect{Kind: Fail, Err: err} }

func created(name string) Input { return Input{Kind: Created, Name: name} }
func listed(pzxid int64, children ...string) Input {
	return Input{Kind: Listed, Children: children, Listing: queue.NewListing(children), Pzxid: pzxid}
}

// childrenWatched is the reply to a children watch.
func childrenWatched(pzxid int64, children ...string) Input {
	return Input{Kind: WatchSet, ChildWatch: true, Children: children, Listing: queue.NewListing(children), Pzxid: pzxid}
}
func reply(k InputKind, o input.Outcome) Input { return Input{Kind: k, Outcome: o} }

// recoverRead is the recovery read of the n-th id's create.
func recoverRead(n int) Effect {
	return Effect{Kind: Recover, Path: "/locks/a", ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n)}
}

// recovered is the reply to a recovery read that found ours (or "").
func recovered(pzxid int64, ours string, children ...string) Input {
	return Input{Kind: Listed, Children: children, Pzxid: pzxid, Name: ours}
}

// toHeld drives a fresh contender to a grant with node(1, 5).
func (s *script) toHeld() {
	s.t.Helper()
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, node(1, 5)), grant(100))
	s.phase(Held)
}

// toWaiting drives a fresh contender to wait behind other(4) with node(1, 5).
func (s *script) toWaiting() {
	s.t.Helper()
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(reply(WatchSet, input.OK))
	s.phase(Waiting)
}

func TestGrantAndRelease(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(Input{Kind: Release}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), Effect{Kind: Released}, done)
	s.phase(Done)
	s.step(Input{Kind: Release}) // nothing after the end
}

func TestWaitThenGrant(t *testing.T) {
	s := newScript(t)
	s.toWaiting()
	s.step(Input{Kind: WatchFired}, list)
	s.step(listed(101, node(1, 5)), grant(101))
}

func TestPredecessorGoneBeforeWatchSet(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(reply(WatchSet, input.NoNode), list)
	s.step(listed(102, node(1, 5)), grant(102))
}

func TestWatchFiresBeforeWatchReply(t *testing.T) {
	// The notification can reach the loop before the reply to the request
	// that set the watch: the contender must not then wait forever.
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(Input{Kind: WatchFired})
	s.step(reply(WatchSet, input.OK), list)
}

func TestPredecessorLeavesWhileNotHead(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(2), other(3), node(1, 5)), watch(other(3)))
	s.step(reply(WatchSet, input.OK))
	s.step(Input{Kind: WatchFired}, list)
	s.step(listed(101, other(2), node(1, 5)), watch(other(2)))
	s.step(reply(WatchSet, input.OK))
	s.step(Input{Kind: WatchFired}, list)
	s.step(listed(103, node(1, 5)), grant(103))
}

func TestStaleWatchEventIgnored(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: WatchFired}) // nothing watched yet
	s.step(created(node(1, 5)), list)
	s.step(Input{Kind: WatchFired}) // listing in flight: not ours
	s.step(listed(100, node(1, 5)), grant(100))
	s.step(Input{Kind: WatchFired}) // held: no watch of ours
	s.phase(Held)
}

// A create that finds its lock path missing is sent again with the path
// made in the same request (Cold): no request ever makes the path alone,
// which a cancel in between would leave without a child, and so never
// reaped.
func TestMissingLockPathCreatedWithTheNode(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	cold := create(2)
	cold.Cold = true
	s.step(reply(Created, input.NoNode), cold)
	s.step(created(node(2, 0)), list)
}

// A node made with its lock path, its first child, holds on itself alone:
// no listing, the token the one the reply carried.
func TestFreshNodeHoldsWithoutListing(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	fresh := created(node(1, 0))
	fresh.Fresh, fresh.Pzxid = true, 7
	s.step(fresh, grant(7))
	s.phase(Held)
}

// A fresh reply after an expiry heard of while the create was in flight
// may be from the session that ended, its node gone: it lists.
func TestFreshNodeAfterExpiryLists(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: Expired})
	fresh := created(node(1, 0))
	fresh.Fresh, fresh.Pzxid = true, 7
	s.step(fresh, list)
}

// Cancelled while the create that found the path missing was in flight:
// nothing was made, and nothing is sent.
func TestCancelledCreateOnMissingPathEnds(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled))
	s.step(reply(Created, input.NoNode), done)
}

func TestCancelBeforeCreateReply(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled))
	// The create still lands: its node is deleted, never left behind.
	s.step(created(node(1, 5)), del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)
}

func TestCancelBeforeCreateReplyThenConnectionLoss(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled))
	s.step(reply(Created, input.ConnLoss), park)
	s.step(Input{Kind: Retry}, recoverRead(1))
	// The create did happen: recovery finds the node by its id and deletes it.
	s.step(recovered(100, node(1, 5), other(3), node(1, 5)), del(node(1, 5)))
	s.step(reply(Deleted, input.ConnLoss), park)
	s.step(Input{Kind: Reconnected}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)
}

func TestCancelWhileListingAndWatching(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(Input{Kind: Cancel, Err: context.DeadlineExceeded}, fail(context.DeadlineExceeded))
	s.step(listed(100, node(1, 5)), del(node(1, 5))) // no grant after a cancel
	s.step(reply(Deleted, input.NoNode), done)

	s = newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled))
	s.step(reply(WatchSet, input.OK), del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)
}

func TestCancelWhileWaiting(t *testing.T) {
	s := newScript(t)
	s.toWaiting()
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled), del(node(1, 5)))
	s.step(Input{Kind: WatchFired}) // late notification: ignored
	s.step(reply(Deleted, input.OK), done)
}

func TestCancelAfterGrantKeepsLease(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(Input{Kind: Cancel, Err: context.Canceled})
	s.phase(Held)
}

func TestCancelWhileParked(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(reply(Listed, input.ConnLoss), park)
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled))
	s.step(Input{Kind: Retry}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)
}

func TestConnectionLossDuringCreateNodeFound(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(reply(Created, input.ConnLoss), park)
	s.step(Input{Kind: Disconnected})
	// Not a plain listing: the recovery read, synced, that looks for our id.
	s.step(Input{Kind: Reconnected}, recoverRead(1))
	// The server did create it: adopt it, never create a second.
	s.step(recovered(100, node(1, 5), node(1, 5)), grant(100))
	if s.c.node != node(1, 5) {
		t.Fatalf("adopted %q", s.c.node)
	}
}

func TestConnectionLossDuringCreateNodeNotFound(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(reply(Created, input.ConnLoss), park)
	s.step(Input{Kind: Retry}, recoverRead(1))
	// Not created: send the same create again (same protected id).
	s.step(recovered(100, "", other(3)), create(1))
	s.step(created(node(1, 4)), list)
	s.step(listed(101, other(3), node(1, 4)), watch(other(3)))
}

// A node carrying our id that another session owns is never adopted, nor
// deleted: the id is taken, and the contender starts under a fresh one.
func TestRecoveryIgnoresNodeOfAnotherSession(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(reply(Created, input.ConnLoss), park)
	s.step(Input{Kind: Retry}, recoverRead(1))
	foreign := Input{Kind: Listed, Children: []string{node(1, 3)}, Pzxid: 100, Foreign: true}
	s.step(foreign, create(2))
	s.step(created(node(2, 4)), list)
	s.step(listed(101, node(1, 3), node(2, 4)), watch(node(1, 3)))

	// Cancelled meanwhile: nothing of ours to clean up.
	s = newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled))
	s.step(reply(Created, input.ConnLoss), park)
	s.step(Input{Kind: Retry}, recoverRead(1))
	s.step(foreign, done)
}

// Every listing asked for while a create's fate is unknown is the recovery
// read, whoever asks: a failed recovery read retried, a cleanup.
func TestEveryListingWhileRecoveringIsTheRecoveryRead(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(reply(Created, input.ConnLoss), park)
	s.step(Input{Kind: Retry}, recoverRead(1))
	s.step(reply(Listed, input.ConnLoss), park)
	s.step(Input{Kind: Retry}, recoverRead(1))
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled))
	s.step(reply(Listed, input.ConnLoss), park)
	s.step(Input{Kind: Reconnected}, recoverRead(1))
	s.step(recovered(100, node(1, 5), node(1, 5)), del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)
}

func TestSessionExpiryWhileWaiting(t *testing.T) {
	s := newScript(t)
	s.toWaiting()
	s.step(Input{Kind: Disconnected})
	// Re-enqueued under the new session, with a fresh protected id.
	s.step(Input{Kind: Expired}, create(2))
	s.step(Input{Kind: Reconnected})
	s.step(created(node(2, 9)), list)
	s.step(listed(200, node(2, 9)), grant(200))
}

func TestSessionExpiryWhileWaitingFailOnExpiry(t *testing.T) {
	s := newScript(t, failOnExpiry)
	s.toWaiting()
	s.step(Input{Kind: Expired}, fail(ErrSessionExpired), done)
}

func TestSessionExpiryWhileListingInFlight(t *testing.T) {
	// A listing answered under the old session proves nothing: even one
	// that shows us first must not grant.
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(Input{Kind: Expired})
	s.step(listed(100, node(1, 5)), create(2))
}

func TestSessionExpiryWhileCreateInFlight(t *testing.T) {
	// A create queued across the expiry may run under the new session: its
	// node is followed, and the listing says whether it lives.
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: Expired})
	s.step(Input{Kind: Reconnected})
	s.step(created(node(1, 7)), list)
	s.step(listed(300, node(1, 7)), grant(300))

	s = newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: Expired})
	s.step(created(node(1, 7)), list)
	s.step(listed(300, other(8)), create(2)) // it died with the old session
}

// A contender that fails on expiry does not follow a node that a create
// sent late made under the new session: it removes it and fails.
func TestSessionExpiryWhileCreateInFlightFailOnExpiry(t *testing.T) {
	s := newScript(t, failOnExpiry)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: Expired})
	s.step(Input{Kind: Reconnected})
	s.step(created(node(1, 7)), fail(ErrSessionExpired), del(node(1, 7)))
	s.step(reply(Deleted, input.OK), done)

	// Its fate unknown: found by its protected id, then removed.
	s = newScript(t, failOnExpiry)
	s.step(Input{Kind: Start}, create(1))
	s.step(Input{Kind: Expired})
	s.step(reply(Created, input.ConnLoss), fail(ErrSessionExpired), recoverRead(1))
	s.step(recovered(300, node(1, 7), node(1, 7)), del(node(1, 7)))
	s.step(reply(Deleted, input.OK), done)
}

func TestSessionExpiryWhileHolding(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(Input{Kind: Disconnected}, Effect{Kind: Suspend})
	s.step(Input{Kind: Expired}, Effect{Kind: Lost, Err: ErrSessionExpired}, done)
}

func TestSuspendAndResume(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(Input{Kind: Disconnected}, Effect{Kind: Suspend})
	s.step(Input{Kind: Reconnected}, Effect{Kind: Resume})
	s.phase(Held)
}

// A lease a lapse of trust lost keeps its node until its holder has had
// the lost margin to stop (Stopped), then, the session having survived,
// deletes it: however soon the same session answers again, the next
// holder is not let in while this one may still be stopping.
func TestUntrustedSessionLosesLeaseThenCleansUpOnceTheHolderStopped(t *testing.T) {
	lost := []Effect{{Kind: Lost, Err: ErrLost}, {Kind: AwaitStop}, park}
	// lapsed is a holder whose lease the lapse lost, disconnected first
	// or not.
	lapsed := func(disconnected bool) *script {
		s := newScript(t)
		s.toHeld()
		if disconnected {
			s.step(Input{Kind: Disconnected}, Effect{Kind: Suspend})
		}
		s.step(Input{Kind: Untrusted}, lost...)
		return s
	}

	// Back before the margin has passed: the delete waits for it.
	s := lapsed(true)
	s.step(Input{Kind: Reconnected})
	s.step(Input{Kind: Trusted})
	s.step(Input{Kind: Retry})
	s.step(Input{Kind: Stopped}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done) // no release result: it was lost

	// The margin passes first: the reconnect deletes at once.
	s = lapsed(true)
	s.step(Input{Kind: Stopped})
	s.step(Input{Kind: Reconnected}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)

	// Lapsed while connected (the server went silent): the delete still
	// waits for the margin, then goes at once.
	s = lapsed(false)
	s.step(Input{Kind: Retry})
	s.step(Input{Kind: Stopped}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)

	// The engine closes meanwhile: its session's end removes the node, so
	// the close need not wait for the margin.
	s = lapsed(false)
	s.step(Input{Kind: Cancel, Err: ErrClosed, Closing: true}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)

	// Closing with no connection: nothing to send, the session's close
	// removes the node.
	s = lapsed(true)
	s.step(Input{Kind: Cancel, Err: ErrClosed, Closing: true}, done)

	// The session expires meanwhile: the node is gone with it.
	s = lapsed(true)
	s.step(Input{Kind: Expired}, done)
	s.step(Input{Kind: Stopped})
}

func TestUntrustedSessionBlocksGrant(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(Input{Kind: Disconnected})
	s.step(Input{Kind: Untrusted})
	s.step(listed(100, node(1, 5)), park)
	// Reconnecting is not being trusted: only the watchdog says so.
	s.step(Input{Kind: Reconnected}, list)
	s.step(listed(101, node(1, 5)), park)
	s.step(Input{Kind: Trusted})
	s.step(Input{Kind: Retry}, list)
	s.step(listed(102, node(1, 5)), grant(102))
}

// The engine refuses a grant when the watchdog lapsed after the loop last
// heard from it: the contender waits again, unresolved, and is granted
// once the session is trusted.
func TestRefusedGrantWaitsForTrust(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, node(1, 5)), grant(100))
	s.step(Input{Kind: GrantRefused}, park)
	if s.c.resolved || s.c.granted {
		t.Fatalf("refused grant left resolved=%v granted=%v", s.c.resolved, s.c.granted)
	}
	s.step(Input{Kind: Untrusted}) // the lapse the loop hears of next
	s.step(Input{Kind: Retry}, list)
	s.step(listed(101, node(1, 5)), park)
	s.step(Input{Kind: Trusted})
	s.step(Input{Kind: Retry}, list)
	s.step(listed(102, node(1, 5)), grant(102))

	// A refusal of a handoff likewise.
	s = newScript(t, deciding(nextDecide))
	s.toWaiting()
	s.step(Input{Kind: Handoff, Pzxid: 7}, grant(7))
	s.step(Input{Kind: GrantRefused}, park)
	s.step(Input{Kind: Retry}, list)
	s.step(listed(101, node(1, 5)), park)
}

// A grant refused because its reply came from a session that has ended
// leaves the contender trusting: the expiry the loop hears of next queues
// it again, and the new session's listing grants it.
func TestGrantRefusedForAnEndedSessionRequeuesOnExpiry(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, node(1, 5)), grant(100))
	s.step(Input{Kind: GrantRefused, SessionEnded: true}, park)
	if s.c.resolved || s.c.granted || s.c.untrusted {
		t.Fatalf("refused grant left resolved=%v granted=%v untrusted=%v", s.c.resolved, s.c.granted, s.c.untrusted)
	}
	s.step(Input{Kind: Expired}, create(2))
	s.step(Input{Kind: Reconnected})
	s.step(created(node(2, 9)), list)
	s.step(listed(101, node(2, 9)), grant(101))
}

func TestGrantWhileDisconnectedIsSuspended(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(Input{Kind: Disconnected})
	s.step(listed(100, node(1, 5)), Effect{Kind: Grant, Token: 100, Suspended: true})
}

func TestNodeDeletedByOthersRequeues(t *testing.T) {
	s := newScript(t)
	s.toWaiting()
	s.step(Input{Kind: WatchFired}, list)
	s.step(listed(101, other(6)), create(2))
}

// A try behind a node that may linger (a mutex or write node) reads it
// with a watch: held (an even data version), the try fails once its own
// node is gone; marked lingering (odd), it waits for the node to go or to
// be unmarked, and is granted when it goes.
func TestTryOnly(t *testing.T) {
	s := newScript(t, tryOnly)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(Input{Kind: WatchSet, Outcome: input.OK, Version: 2}, del(node(1, 5)))
	// The future fails only once the node is gone.
	s.step(reply(Deleted, input.OK), fail(ErrWouldBlock), done)

	s = newScript(t, tryOnly)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(Input{Kind: WatchSet, Outcome: input.OK, Version: 1})
	s.phase(Waiting)
	s.step(Input{Kind: WatchFired}, list) // unmarked: held after all
	s.step(listed(101, other(4), node(1, 5)), watch(other(4)))
	s.step(Input{Kind: WatchSet, Outcome: input.OK, Version: 2}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), fail(ErrWouldBlock), done)

	s = newScript(t, tryOnly)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(Input{Kind: WatchSet, Outcome: input.OK, Version: 1})
	s.step(Input{Kind: WatchFired}, list) // given back
	s.step(listed(101, node(1, 5)), grant(101))

	// Behind a node that never lingers (a reader's), a try fails at once.
	reader := "_c_ffffffff-0000-4000-8000-000000000000-__READ__0000000004"
	s = newScript(t, tryOnly)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, reader, node(1, 5)), del(node(1, 5)))
	s.step(reply(Deleted, input.OK), fail(ErrWouldBlock), done)

	s = newScript(t, tryOnly)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, node(1, 5)), grant(100))
}

// TestTryOnlyOnAPrediction: a listing the engine answered from what it
// knows may show a node gone since: a try lists the server before it
// fails on one, and is granted on a prediction that admits it.
func TestTryOnlyOnAPrediction(t *testing.T) {
	predicted := func(pzxid int64, children ...string) Input {
		in := listed(pzxid, children...)
		in.Predicted = true
		return in
	}
	s := newScript(t, tryOnly)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(predicted(100, other(4), node(1, 5)), list)
	s.phase(Listing)
	s.step(listed(101, node(1, 5)), grant(101))

	s = newScript(t, tryOnly)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(predicted(100, other(4), node(1, 5)), list)
	s.step(listed(101, other(4), node(1, 5)), watch(other(4)))
	s.step(Input{Kind: WatchSet, Outcome: input.OK}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), fail(ErrWouldBlock), done)

	s = newScript(t, tryOnly)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(predicted(100, node(1, 5)), grant(100))
}

func TestCloseWhileHolding(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(Input{Kind: Cancel, Err: ErrClosed, Closing: true},
		Effect{Kind: Lost, Err: ErrClosed}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)
}

func TestCloseWhileParkedAndDisconnected(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(Input{Kind: Disconnected})
	s.step(reply(Listed, input.ConnLoss), park)
	// No server to delete through: closing the session removes the node.
	s.step(Input{Kind: Cancel, Err: ErrClosed, Closing: true}, fail(ErrClosed), done)
}

func TestRefusedRequestFailsAndCleansUp(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	refused := errors.New("not authenticated")
	got := s.c.Step(Input{Kind: Listed, Outcome: input.Refused, Err: refused})
	if len(got) != 2 || got[0].Kind != Fail || !errors.Is(got[0].Err, refused) || got[1] != del(node(1, 5)) {
		t.Fatalf("got %v", got)
	}
	s.step(reply(Deleted, input.OK), done)
}

// Every reachable path resolves the acquisition exactly once and ends.
func TestEveryPathResolvesOnce(t *testing.T) {
	inputs := []Input{
		{Kind: Start}, created(node(1, 5)), reply(Created, input.ConnLoss), reply(Created, input.NoNode),
		listed(1, node(1, 5)), listed(1, other(1), node(1, 5)), listed(1, other(1)),
		reply(Listed, input.ConnLoss), reply(WatchSet, input.OK), reply(WatchSet, input.NoNode),
		{Kind: WatchFired}, reply(Deleted, input.OK), reply(Deleted, input.ConnLoss), {Kind: Release},
		{Kind: Cancel, Err: context.Canceled}, {Kind: Cancel, Err: ErrClosed, Closing: true},
		{Kind: Disconnected}, {Kind: Reconnected}, {Kind: Expired}, {Kind: Untrusted}, {Kind: Retry},
		listed(2, node(2, 6)), created(node(2, 6)), {Kind: Handoff, Pzxid: 3}, {Kind: Trusted}, {Kind: GrantRefused}, {Kind: Stopped},
		recovered(4, node(1, 5), node(1, 5)), {Kind: Listed, Children: []string{node(1, 5)}, Foreign: true},
		{Kind: Created, Name: node(1, 0), Fresh: true, Pzxid: 2},
	}
	// A small deterministic walk: every sequence of up to 4 inputs after start.
	var walk func(prefix []int)
	count := 0
	walk = func(prefix []int) {
		s := newScript(t, deciding(nextDecide)) // handoffs grant
		resolved := 0
		granted := false // the last step granted
		for _, i := range prefix {
			if inputs[i].Kind == GrantRefused {
				// The engine refuses only the grant it was just handed,
				// which then never resolved anything.
				if !granted {
					continue
				}
				resolved--
			}
			granted = false
			for _, ef := range s.c.Step(inputs[i]) {
				if ef.Kind == Grant || ef.Kind == Fail {
					resolved++
				}
				granted = granted || ef.Kind == Grant
			}
		}
		count++
		if resolved > 1 {
			t.Fatalf("resolved %d times after %v", resolved, prefix)
		}
		if len(prefix) == 4 {
			return
		}
		for i := range inputs {
			walk(append(slices.Clone(prefix), i))
		}
	}
	walk([]int{0})
	if count == 0 {
		t.Fatal("walked nothing")
	}
}

// countDecide admits the first two nodes and makes the rest watch the
// children, as a semaphore's lease path does.
func countDecide(l *queue.Listing, self string) queue.Decision {
	switch i := l.Index(self); {
	case i < 0:
		return queue.Decision{Missing: true}
	case i < 2:
		return queue.Decision{Holds: true}
	}
	return queue.Decision{WatchChildren: true}
}

func TestChildrenWatchGrantsOnItsOwnReply(t *testing.T) {
	s := newScript(t, deciding(countDecide))
	watchChildren := Effect{Kind: Watch, Path: "/locks/a", Children: true}
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(3), other(4), node(1, 5)), watchChildren)
	// A holder left between the listing and the watch: the watch's own
	// reply shows it, so no notification is needed.
	s.step(childrenWatched(107, other(4), node(1, 5)), grant(107))
	s.phase(Held)
}

func TestChildrenWatchWaitsThenRelists(t *testing.T) {
	s := newScript(t, deciding(countDecide))
	watchChildren := Effect{Kind: Watch, Path: "/locks/a", Children: true}
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(3), other(4), node(1, 5)), watchChildren)
	s.step(childrenWatched(100, other(3), other(4), node(1, 5)))
	s.phase(Waiting)
	s.step(Input{Kind: WatchFired}, list)
	s.step(listed(109, other(3), node(1, 5)), grant(109))
}

func TestFixedSequenceNode(t *testing.T) {
	s := newScript(t, borrowing("0000000005"))
	s.step(Input{Kind: Start}, Effect{Kind: Create, Path: "/locks/a/_c_00000000-0000-4000-8000-000000000001-lock-0000000005"})
}

func nextDecide(l *queue.Listing, self string) queue.Decision {
	d := seqDecide(l, self)
	d.Next = !d.Holds && !d.Missing
	return d
}

func TestHandoffGrantsWithoutListing(t *testing.T) {
	s := newScript(t, deciding(nextDecide))
	s.toWaiting()
	s.step(Input{Kind: Handoff, Pzxid: 120}, grant(120))
	s.phase(Held)
}

func TestHandoffWithoutNextLists(t *testing.T) {
	s := newScript(t)
	s.toWaiting() // seqDecide never sets Next
	s.step(Input{Kind: Handoff, Pzxid: 120}, list)
}

func TestHandoffAfterCancelIsIgnored(t *testing.T) {
	s := newScript(t, deciding(nextDecide))
	s.toWaiting()
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled), del(node(1, 5)))
	s.step(Input{Kind: Handoff, Pzxid: 120})
	s.phase(Deleting)
}

// A node with a borrowed sequence number (a downgrade) is never made again:
// in a new session it would jump the queue.
func TestFixedSequenceNeverRecreated(t *testing.T) {
	// fixed is a machine whose node borrows number 5, its create sent.
	fixed := func(t *testing.T) *script {
		s := newScript(t, borrowing("0000000005"))
		s.step(Input{Kind: Start}, Effect{Kind: Create, Path: "/locks/a/_c_00000000-0000-4000-8000-000000000001-lock-0000000005"})
		return s
	}
	t.Run("expiry while waiting", func(t *testing.T) {
		s := fixed(t)
		s.step(created("_c_00000000-0000-4000-8000-000000000001-lock-0000000005"), list)
		s.step(listed(100, other(4), "_c_00000000-0000-4000-8000-000000000001-lock-0000000005"), watch(other(4)))
		s.step(reply(WatchSet, input.OK))
		s.step(Input{Kind: Expired}, fail(ErrSessionExpired), done)
	})
	t.Run("create answered after expiry", func(t *testing.T) {
		s := fixed(t)
		s.step(Input{Kind: Expired})
		name := "_c_00000000-0000-4000-8000-000000000001-lock-0000000005"
		s.step(created(name), fail(ErrSessionExpired), del(name))
	})
	t.Run("node gone", func(t *testing.T) {
		s := fixed(t)
		s.step(created("_c_00000000-0000-4000-8000-000000000001-lock-0000000005"), list)
		effs := s.c.Step(listed(100, other(4)))
		if len(effs) != 2 || effs[0].Kind != Fail || !errors.Is(effs[0].Err, ErrLost) || effs[1] != done {
			t.Fatalf("effects %v, want a failure with ErrLost and done", effs)
		}
	})
	// A borrowed number is granted only beside the node it was borrowed
	// from: a downgrade's read node created after its writer's node left
	// (the writer released before the read lease was granted) would sort
	// ahead of a writer granted meanwhile.
	t.Run("lender gone", func(t *testing.T) {
		s := fixed(t)
		self := "_c_00000000-0000-4000-8000-000000000001-lock-0000000005"
		s.step(created(self), list)
		effs := s.c.Step(listed(100, self, "_c_00000000-0000-4000-8000-0000000000ff-__WRIT__0000000006"))
		if len(effs) != 2 || effs[0].Kind != Fail || !errors.Is(effs[0].Err, ErrLost) || effs[1] != del(self) {
			t.Fatalf("effects %v, want a failure with ErrLost and the node's delete", effs)
		}
	})
	t.Run("lender listed", func(t *testing.T) {
		s := fixed(t)
		self := "_c_00000000-0000-4000-8000-000000000001-lock-0000000005"
		s.step(created(self), list)
		s.step(listed(100, self, "_c_00000000-0000-4000-8000-0000000000ff-__WRIT__0000000005"), grant(100))
	})
	// Named by the engine (Config.Lender: its own held writer), the lender
	// must be that very node: another of its number is another incarnation
	// of the path's (ours went with its lease, the path was reaped and made
	// again, and a create of ours sent before that was sent again after),
	// and that node holds. Found by the simulator, seed 34038738: a
	// downgrade's read node granted beside another client's mutex node 0.
	t.Run("lender named, another of its number listed", func(t *testing.T) {
		lender := "_c_00000000-0000-4000-8000-0000000000ff-__WRIT__0000000005"
		s := newScript(t, func(c *Config) { c.Seq, c.Lender = "0000000005", lender })
		self := "_c_00000000-0000-4000-8000-000000000001-lock-0000000005"
		s.step(Input{Kind: Start}, Effect{Kind: Create, Path: "/locks/a/" + self})
		s.step(created(self), list)
		effs := s.c.Step(listed(100, other(5), self))
		if len(effs) != 2 || effs[0].Kind != Fail || !errors.Is(effs[0].Err, ErrLost) || effs[1] != del(self) {
			t.Fatalf("effects %v, want a failure with ErrLost and the node's delete", effs)
		}
		s = newScript(t, func(c *Config) { c.Seq, c.Lender = "0000000005", lender })
		s.step(Input{Kind: Start}, Effect{Kind: Create, Path: "/locks/a/" + self})
		s.step(created(self), list)
		s.step(listed(100, self, lender), grant(100))
	})
	// A create whose reply was lost and that the recovery read finds was
	// never made is not sent again: the node whose number it borrows may
	// be gone by now (the watchdog lost that lease, and the engine deleted
	// its node on reconnecting, before this recovery read was answered),
	// and a writer queued behind it may hold already. Likewise when our id
	// turns out taken, or when the lock path itself is gone.
	lostCreate := func(s *script) {
		s.step(reply(Created, input.ConnLoss), park)
		s.step(Input{Kind: Retry}, recoverRead(1))
	}
	for _, c := range []struct {
		name string
		in   func(*script) Input
	}{
		{"create never made", func(s *script) Input {
			lostCreate(s)
			return recovered(100, "", other(6))
		}},
		{"id taken", func(s *script) Input {
			lostCreate(s)
			in := recovered(100, "", other(6))
			in.Foreign = true
			return in
		}},
		{"lock path gone", func(s *script) Input {
			return reply(Created, input.NoNode)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := fixed(t)
			effs := s.c.Step(c.in(s))
			if len(effs) != 2 || effs[0].Kind != Fail || !errors.Is(effs[0].Err, ErrLost) || effs[1] != done {
				t.Fatalf("effects %v, want a failure with ErrLost and done", effs)
			}
		})
	}
}

// A recovery read refused for a reason of its own (an ACL that lets this
// client create but not list, say) fails the acquisition, but our node may
// exist, and only a recovery read can find it to delete it: it is read
// again after a backoff, for as long as the session lives, not at once (a
// refusal that persists would have it repeat as fast as the server
// answers).
func TestRefusedRecoveryReadIsRetriedAfterABackoff(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(reply(Created, input.ConnLoss), park)
	s.step(Input{Kind: Retry}, recoverRead(1))
	refused := errors.New("zk: not authenticated")
	got := s.c.Step(Input{Kind: Listed, Outcome: input.Refused, Err: refused})
	if len(got) != 2 || got[0].Kind != Fail || !errors.Is(got[0].Err, refused) || got[1].Kind != Park {
		t.Fatalf("refused recovery read: effects %v, want a failure and a park", got)
	}
	got = s.c.Step(Input{Kind: Retry})
	if len(got) != 1 || got[0] != recoverRead(1) {
		t.Fatalf("retry: effects %v, want the recovery read", got)
	}
	got = s.c.Step(Input{Kind: Listed, Outcome: input.Refused, Err: refused})
	if len(got) != 1 || got[0].Kind != Park || !errors.Is(got[0].Err, refused) {
		t.Fatalf("refused again: effects %v, want a park carrying the refusal", got)
	}
	s.step(Input{Kind: Retry}, recoverRead(1))
	// Found at last: deleted, and the contender ends.
	s.step(recovered(101, node(1, 5), node(1, 5)), del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)
}

// A delete refused for an unexpected reason is never given up: the node
// would block the lock path for every client until the session ends.
func TestRefusedDeleteIsRetried(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(Input{Kind: Release}, del(node(1, 5)))
	refused := errors.New("zk: buffer too small")
	got := s.c.Step(Input{Kind: Deleted, Outcome: input.Refused, Err: refused})
	if len(got) != 1 || got[0].Kind != Park || !errors.Is(got[0].Err, refused) {
		t.Fatalf("refused delete: effects %v, want a park carrying the refusal", got)
	}
	s.step(Input{Kind: Retry}, del(node(1, 5)))
	// Gone meanwhile (say the first attempt was applied after all): released.
	s.step(reply(Deleted, input.NoNode), Effect{Kind: Released}, done)

	// A cancelled waiter's cleanup, likewise.
	s = newScript(t)
	s.toWaiting()
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled), del(node(1, 5)))
	got = s.c.Step(Input{Kind: Deleted, Outcome: input.Refused, Err: refused})
	if len(got) != 1 || got[0].Kind != Park {
		t.Fatalf("refused cleanup delete: effects %v, want a park", got)
	}
	s.step(Input{Kind: Retry}, del(node(1, 5)))
	s.step(reply(Deleted, input.OK), done)
}

// A Decider that calls a listed node missing would have the contender
// create a node per listing and leave each behind. The node is deleted
// instead, and the acquisition then fails with ErrBadDecision.
func TestMissingVerdictOnAListedNodeDeletesItThenFails(t *testing.T) {
	s := newScript(t, deciding(func(*queue.Listing, string) queue.Decision { return queue.Decision{Missing: true} }))
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), del(node(1, 5)))
	effs := s.c.Step(reply(Deleted, input.OK))
	if len(effs) != 2 || effs[0].Kind != Fail || !errors.Is(effs[0].Err, ErrBadDecision) || effs[1] != done {
		t.Fatalf("after the delete: effects %v, want a failure with ErrBadDecision and done", effs)
	}

	// A node that is really gone is created again, as before.
	s = newScript(t, deciding(func(*queue.Listing, string) queue.Decision { return queue.Decision{Missing: true} }))
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4)), create(2))
}

// Past 2^31 changes of a path that never empties, a new node's number wraps
// negative and sorts first: no grant on such an order, the acquisition
// fails and its node is deleted.
func TestWrappedListingFailsTheAcquisition(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, -2147483648)), list)
	effs := s.c.Step(listed(100, other(2147483646), node(1, -2147483648)))
	if len(effs) != 2 || effs[0].Kind != Fail || !errors.Is(effs[0].Err, ErrSequenceWrapped) || effs[1] != del(node(1, -2147483648)) {
		t.Fatalf("on a wrapped Listing: effects %v, want a failure with ErrSequenceWrapped and the node's delete", effs)
	}
	s.step(reply(Deleted, input.OK), done)

	// The same through a children watch's reply.
	s = newScript(t, deciding(countDecide))
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 2147483645)), list)
	s.step(listed(100, other(2147483643), other(2147483644), node(1, 2147483645)), Effect{Kind: Watch, Path: "/locks/a", Children: true})
	effs = s.c.Step(childrenWatched(107, other(-2147483648), node(1, 2147483645)))
	if len(effs) != 2 || effs[0].Kind != Fail || !errors.Is(effs[0].Err, ErrSequenceWrapped) || effs[1] != del(node(1, 2147483645)) {
		t.Fatalf("on a wrapped children watch: effects %v, want a failure with ErrSequenceWrapped and the node's delete", effs)
	}
}

// A reply for one contender alone may come without a parsed listing (the
// engine parses only the listings it shares): the contender parses it.
func TestListedWithoutAParsedListing(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(Input{Kind: Listed, Children: []string{other(4), node(1, 5)}, Pzxid: 100}, watch(other(4)))
	s.step(reply(WatchSet, input.NoNode), list)
	s.step(Input{Kind: Listed, Children: []string{node(1, 5)}, Pzxid: 101}, grant(101))
}

// errServerNoAuth stands for the client's error of a request refused for
// lack of rights, which the runtime classifies as input.NoAuth.
var errServerNoAuth = errors.New("zk: not authenticated")

// A delete the ACL refuses is not retried: asking again would be refused
// for as long as the session lives. A release fails with the refusal
// (ErrNoAuth); a waiter's cleanup ends; the node is left to the session.
func TestDeleteRefusedByACLEnds(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(Input{Kind: Release}, del(node(1, 5)))
	got := s.c.Step(Input{Kind: Deleted, Outcome: input.NoAuth, Err: errServerNoAuth})
	if len(got) != 2 || got[0].Kind != Released || !errors.Is(got[0].Err, ErrNoAuth) ||
		got[1].Kind != Forget || !errors.Is(got[1].Err, errServerNoAuth) {
		t.Fatalf("release refused: effects %v, want released with ErrNoAuth, then done", got)
	}

	s = newScript(t)
	s.toWaiting()
	s.step(Input{Kind: Cancel, Err: context.Canceled}, fail(context.Canceled), del(node(1, 5)))
	got = s.c.Step(Input{Kind: Deleted, Outcome: input.NoAuth, Err: errServerNoAuth})
	if len(got) != 1 || got[0].Kind != Forget {
		t.Fatalf("cleanup refused: effects %v, want done", got)
	}
}

// A recovery read refused for lack of rights (the create's fate unknown,
// and the lock path no longer readable to us) fails the acquisition and
// ends: looking for the node again would be refused for as long as the
// session lives. Other refusals are read again after a backoff.
func TestRefusedRecoveryReadEnds(t *testing.T) {
	s := newScript(t)
	s.step(Input{Kind: Start}, create(1))
	s.step(reply(Created, input.ConnLoss), park)
	s.step(Input{Kind: Retry}, Effect{Kind: Recover, Path: "/locks/a", ID: "00000000-0000-4000-8000-000000000001"})
	got := s.c.Step(Input{Kind: Listed, Outcome: input.NoAuth, Err: errServerNoAuth})
	if len(got) != 2 || got[0].Kind != Fail || !errors.Is(got[0].Err, ErrNoAuth) ||
		got[1].Kind != Forget || !errors.Is(got[1].Err, ErrNoAuth) {
		t.Fatalf("refused recovery read: effects %v, want a failure with ErrNoAuth, then done (logging it)", got)
	}
}

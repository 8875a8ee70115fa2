package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/queue"
)

// Scripted, deterministic tests of the contender state machine: no server,
// no goroutines, no clock. Each feeds inputs and checks the exact effects.

// seqDecide is a minimal mutex recipe for these tests: the first node in
// queue order holds, a waiter watches its predecessor.
func seqDecide(l *queue.Listing, self string) Decision {
	i := l.Index(self)
	switch {
	case i < 0:
		return Decision{Missing: true}
	case i == 0:
		return Decision{Holds: true}
	}
	return Decision{Watch: l.Nodes()[i-1].Name}
}

type script struct {
	t *testing.T
	c *contender
}

func newScript(t *testing.T) *script {
	n := 0
	ids := func() string {
		n++
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
	}
	return &script{t: t, c: newContender("/locks/a", "lock-", seqDecide, ids)}
}

// node is the name the server would give the n-th id's node with sequence seq.
func node(n, seq int) string {
	return fmt.Sprintf("_c_00000000-0000-4000-8000-%012d-lock-%010d", n, seq)
}

func other(seq int) string {
	return fmt.Sprintf("_c_ffffffff-0000-4000-8000-000000000000-lock-%010d", seq)
}

func (s *script) step(in input, want ...effect) {
	s.t.Helper()
	got := s.c.step(in)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		s.t.Fatalf("after %v in phase %v:\n got  %v\n want %v", in.kind, s.c.phase, got, want)
	}
}

func (s *script) phase(want phase) {
	s.t.Helper()
	if s.c.phase != want {
		s.t.Fatalf("phase %v, want %v", s.c.phase, want)
	}
}

func create(n int) effect {
	return effect{kind: effCreate, path: "/locks/a/_c_00000000-0000-4000-8000-" + fmt.Sprintf("%012d", n) + "-lock-"}
}

var (
	list = effect{kind: effList, path: "/locks/a"}
	done = effect{kind: effDone}
	park = effect{kind: effPark}
)

func del(name string) effect   { return effect{kind: effDelete, path: "/locks/a/" + name} }
func watch(name string) effect { return effect{kind: effWatch, path: "/locks/a/" + name} }
func grant(tok int64) effect   { return effect{kind: effGrant, token: tok} }
func fail(err error) effect    { return effect{kind: effFail, err: err} }

func created(name string) input { return input{kind: inCreated, name: name} }
func listed(pzxid int64, children ...string) input {
	return input{kind: inListed, children: children, listing: queue.NewListing(children), pzxid: pzxid}
}

// childrenWatched is the reply to a children watch.
func childrenWatched(pzxid int64, children ...string) input {
	return input{kind: inWatchSet, childWatch: true, children: children, listing: queue.NewListing(children), pzxid: pzxid}
}
func reply(k inputKind, o outcome) input { return input{kind: k, outcome: o} }

// recoverRead is the recovery read of the n-th id's create.
func recoverRead(n int) effect {
	return effect{kind: effRecover, path: "/locks/a", id: fmt.Sprintf("00000000-0000-4000-8000-%012d", n)}
}

// recovered is the reply to a recovery read that found ours (or "").
func recovered(pzxid int64, ours string, children ...string) input {
	return input{kind: inListed, children: children, pzxid: pzxid, name: ours}
}

// toHeld drives a fresh contender to a grant with node(1, 5).
func (s *script) toHeld() {
	s.t.Helper()
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, node(1, 5)), grant(100))
	s.phase(phaseHeld)
}

// toWaiting drives a fresh contender to wait behind other(4) with node(1, 5).
func (s *script) toWaiting() {
	s.t.Helper()
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(reply(inWatchSet, outOK))
	s.phase(phaseWaiting)
}

func TestGrantAndRelease(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(input{kind: inRelease}, del(node(1, 5)))
	s.step(reply(inDeleted, outOK), effect{kind: effReleased}, done)
	s.phase(phaseDone)
	s.step(input{kind: inRelease}) // nothing after the end
}

func TestWaitThenGrant(t *testing.T) {
	s := newScript(t)
	s.toWaiting()
	s.step(input{kind: inWatchFired}, list)
	s.step(listed(101, node(1, 5)), grant(101))
}

func TestPredecessorGoneBeforeWatchSet(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(reply(inWatchSet, outNoNode), list)
	s.step(listed(102, node(1, 5)), grant(102))
}

func TestWatchFiresBeforeWatchReply(t *testing.T) {
	// The notification can reach the loop before the reply to the request
	// that set the watch: the contender must not then wait forever.
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(input{kind: inWatchFired})
	s.step(reply(inWatchSet, outOK), list)
}

func TestPredecessorLeavesWhileNotHead(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(2), other(3), node(1, 5)), watch(other(3)))
	s.step(reply(inWatchSet, outOK))
	s.step(input{kind: inWatchFired}, list)
	s.step(listed(101, other(2), node(1, 5)), watch(other(2)))
	s.step(reply(inWatchSet, outOK))
	s.step(input{kind: inWatchFired}, list)
	s.step(listed(103, node(1, 5)), grant(103))
}

func TestStaleWatchEventIgnored(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(input{kind: inWatchFired}) // nothing watched yet
	s.step(created(node(1, 5)), list)
	s.step(input{kind: inWatchFired}) // listing in flight: not ours
	s.step(listed(100, node(1, 5)), grant(100))
	s.step(input{kind: inWatchFired}) // held: no watch of ours
	s.phase(phaseHeld)
}

func TestMissingParentCreated(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(reply(inCreated, outNoNode), effect{kind: effCreateParents, path: "/locks/a"})
	s.step(reply(inParents, outNodeExists), create(2))
	s.step(created(node(2, 0)), list)
}

func TestCancelBeforeCreateReply(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled))
	// The create still lands: its node is deleted, never left behind.
	s.step(created(node(1, 5)), del(node(1, 5)))
	s.step(reply(inDeleted, outOK), done)
}

func TestCancelBeforeCreateReplyThenConnectionLoss(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled))
	s.step(reply(inCreated, outConnLoss), park)
	s.step(input{kind: inRetry}, recoverRead(1))
	// The create did happen: recovery finds the node by its id and deletes it.
	s.step(recovered(100, node(1, 5), other(3), node(1, 5)), del(node(1, 5)))
	s.step(reply(inDeleted, outConnLoss), park)
	s.step(input{kind: inReconnected}, del(node(1, 5)))
	s.step(reply(inDeleted, outOK), done)
}

func TestCancelWhileListingAndWatching(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(input{kind: inCancel, err: context.DeadlineExceeded}, fail(context.DeadlineExceeded))
	s.step(listed(100, node(1, 5)), del(node(1, 5))) // no grant after a cancel
	s.step(reply(inDeleted, outNoNode), done)

	s = newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), watch(other(4)))
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled))
	s.step(reply(inWatchSet, outOK), del(node(1, 5)))
	s.step(reply(inDeleted, outOK), done)
}

func TestCancelWhileWaiting(t *testing.T) {
	s := newScript(t)
	s.toWaiting()
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled), del(node(1, 5)))
	s.step(input{kind: inWatchFired}) // late notification: ignored
	s.step(reply(inDeleted, outOK), done)
}

func TestCancelAfterGrantKeepsLease(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(input{kind: inCancel, err: context.Canceled})
	s.phase(phaseHeld)
}

func TestCancelWhileParked(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(reply(inListed, outConnLoss), park)
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled))
	s.step(input{kind: inRetry}, del(node(1, 5)))
	s.step(reply(inDeleted, outOK), done)
}

func TestConnectionLossDuringCreateNodeFound(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(reply(inCreated, outConnLoss), park)
	s.step(input{kind: inDisconnected})
	// Not a plain listing: the recovery read, synced, that looks for our id.
	s.step(input{kind: inReconnected}, recoverRead(1))
	// The server did create it: adopt it, never create a second.
	s.step(recovered(100, node(1, 5), node(1, 5)), grant(100))
	if s.c.node != node(1, 5) {
		t.Fatalf("adopted %q", s.c.node)
	}
}

func TestConnectionLossDuringCreateNodeNotFound(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(reply(inCreated, outConnLoss), park)
	s.step(input{kind: inRetry}, recoverRead(1))
	// Not created: send the same create again (same protected id).
	s.step(recovered(100, "", other(3)), create(1))
	s.step(created(node(1, 4)), list)
	s.step(listed(101, other(3), node(1, 4)), watch(other(3)))
}

// A node carrying our id that another session owns is never adopted, nor
// deleted: the id is taken, and the contender starts under a fresh one.
func TestRecoveryIgnoresNodeOfAnotherSession(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(reply(inCreated, outConnLoss), park)
	s.step(input{kind: inRetry}, recoverRead(1))
	foreign := input{kind: inListed, children: []string{node(1, 3)}, pzxid: 100, foreign: true}
	s.step(foreign, create(2))
	s.step(created(node(2, 4)), list)
	s.step(listed(101, node(1, 3), node(2, 4)), watch(node(1, 3)))

	// Cancelled meanwhile: nothing of ours to clean up.
	s = newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled))
	s.step(reply(inCreated, outConnLoss), park)
	s.step(input{kind: inRetry}, recoverRead(1))
	s.step(foreign, done)
}

// Every listing asked for while a create's fate is unknown is the recovery
// read, whoever asks: a failed recovery read retried, a cleanup.
func TestEveryListingWhileRecoveringIsTheRecoveryRead(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(reply(inCreated, outConnLoss), park)
	s.step(input{kind: inRetry}, recoverRead(1))
	s.step(reply(inListed, outConnLoss), park)
	s.step(input{kind: inRetry}, recoverRead(1))
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled))
	s.step(reply(inListed, outConnLoss), park)
	s.step(input{kind: inReconnected}, recoverRead(1))
	s.step(recovered(100, node(1, 5), node(1, 5)), del(node(1, 5)))
	s.step(reply(inDeleted, outOK), done)
}

func TestSessionExpiryWhileWaiting(t *testing.T) {
	s := newScript(t)
	s.toWaiting()
	s.step(input{kind: inDisconnected})
	// Re-enqueued under the new session, with a fresh protected id.
	s.step(input{kind: inExpired}, create(2))
	s.step(input{kind: inReconnected})
	s.step(created(node(2, 9)), list)
	s.step(listed(200, node(2, 9)), grant(200))
}

func TestSessionExpiryWhileWaitingFailOnExpiry(t *testing.T) {
	s := newScript(t)
	s.c.failExp = true
	s.toWaiting()
	s.step(input{kind: inExpired}, fail(ErrSessionExpired), done)
}

func TestSessionExpiryWhileListingInFlight(t *testing.T) {
	// A listing answered under the old session proves nothing: even one
	// that shows us first must not grant.
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(input{kind: inExpired})
	s.step(listed(100, node(1, 5)), create(2))
}

func TestSessionExpiryWhileCreateInFlight(t *testing.T) {
	// A create queued across the expiry may run under the new session: its
	// node is followed, and the listing says whether it lives.
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(input{kind: inExpired})
	s.step(input{kind: inReconnected})
	s.step(created(node(1, 7)), list)
	s.step(listed(300, node(1, 7)), grant(300))

	s = newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(input{kind: inExpired})
	s.step(created(node(1, 7)), list)
	s.step(listed(300, other(8)), create(2)) // it died with the old session
}

// A contender that fails on expiry does not follow a node that a create
// sent late made under the new session: it removes it and fails.
func TestSessionExpiryWhileCreateInFlightFailOnExpiry(t *testing.T) {
	s := newScript(t)
	s.c.failExp = true
	s.step(input{kind: inStart}, create(1))
	s.step(input{kind: inExpired})
	s.step(input{kind: inReconnected})
	s.step(created(node(1, 7)), fail(ErrSessionExpired), del(node(1, 7)))
	s.step(reply(inDeleted, outOK), done)

	// Its fate unknown: found by its protected id, then removed.
	s = newScript(t)
	s.c.failExp = true
	s.step(input{kind: inStart}, create(1))
	s.step(input{kind: inExpired})
	s.step(reply(inCreated, outConnLoss), fail(ErrSessionExpired), recoverRead(1))
	s.step(recovered(300, node(1, 7), node(1, 7)), del(node(1, 7)))
	s.step(reply(inDeleted, outOK), done)
}

func TestSessionExpiryWhileHolding(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(input{kind: inDisconnected}, effect{kind: effSuspend})
	s.step(input{kind: inExpired}, effect{kind: effLost, err: ErrSessionExpired}, done)
}

func TestSuspendAndResume(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(input{kind: inDisconnected}, effect{kind: effSuspend})
	s.step(input{kind: inReconnected}, effect{kind: effResume})
	s.phase(phaseHeld)
}

func TestUntrustedSessionLosesLeaseThenCleansUp(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(input{kind: inDisconnected}, effect{kind: effSuspend})
	s.step(input{kind: inUntrusted}, effect{kind: effLost, err: ErrLost}, park)
	// The same session comes back: our node must not linger.
	s.step(input{kind: inReconnected}, del(node(1, 5)))
	s.step(reply(inDeleted, outOK), done) // no release result: it was lost
}

func TestUntrustedSessionBlocksGrant(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(input{kind: inDisconnected})
	s.step(input{kind: inUntrusted})
	s.step(listed(100, node(1, 5)), park)
	// Reconnecting is not being trusted: only the watchdog says so.
	s.step(input{kind: inReconnected}, list)
	s.step(listed(101, node(1, 5)), park)
	s.step(input{kind: inTrusted})
	s.step(input{kind: inRetry}, list)
	s.step(listed(102, node(1, 5)), grant(102))
}

// The engine refuses a grant when the watchdog lapsed after the loop last
// heard from it: the contender waits again, unresolved, and is granted
// once the session is trusted.
func TestRefusedGrantWaitsForTrust(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, node(1, 5)), grant(100))
	s.step(input{kind: inRefused}, park)
	if s.c.resolved || s.c.granted {
		t.Fatalf("refused grant left resolved=%v granted=%v", s.c.resolved, s.c.granted)
	}
	s.step(input{kind: inUntrusted}) // the lapse the loop hears of next
	s.step(input{kind: inRetry}, list)
	s.step(listed(101, node(1, 5)), park)
	s.step(input{kind: inTrusted})
	s.step(input{kind: inRetry}, list)
	s.step(listed(102, node(1, 5)), grant(102))

	// A refusal of a handoff likewise.
	s = newScript(t)
	s.c.decide = nextDecide
	s.toWaiting()
	s.step(input{kind: inHandoff, pzxid: 7}, grant(7))
	s.step(input{kind: inRefused}, park)
	s.step(input{kind: inRetry}, list)
	s.step(listed(101, node(1, 5)), park)
}

// A grant refused because its reply came from a session that has ended
// leaves the contender trusting: the expiry the loop hears of next queues
// it again, and the new session's listing grants it.
func TestGrantRefusedForAnEndedSessionRequeuesOnExpiry(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, node(1, 5)), grant(100))
	s.step(input{kind: inRefused, sessionEnded: true}, park)
	if s.c.resolved || s.c.granted || s.c.untrusted {
		t.Fatalf("refused grant left resolved=%v granted=%v untrusted=%v", s.c.resolved, s.c.granted, s.c.untrusted)
	}
	s.step(input{kind: inExpired}, create(2))
	s.step(input{kind: inReconnected})
	s.step(created(node(2, 9)), list)
	s.step(listed(101, node(2, 9)), grant(101))
}

func TestGrantWhileDisconnectedIsSuspended(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(input{kind: inDisconnected})
	s.step(listed(100, node(1, 5)), effect{kind: effGrant, token: 100, suspended: true})
}

func TestNodeDeletedByOthersRequeues(t *testing.T) {
	s := newScript(t)
	s.toWaiting()
	s.step(input{kind: inWatchFired}, list)
	s.step(listed(101, other(6)), create(2))
}

func TestTryOnly(t *testing.T) {
	s := newScript(t)
	s.c.tryOnly = true
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), del(node(1, 5)))
	// The future fails only once the node is gone.
	s.step(reply(inDeleted, outOK), fail(ErrWouldBlock), done)

	s = newScript(t)
	s.c.tryOnly = true
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, node(1, 5)), grant(100))
}

func TestCloseWhileHolding(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(input{kind: inCancel, err: ErrClosed, closing: true},
		effect{kind: effLost, err: ErrClosed}, del(node(1, 5)))
	s.step(reply(inDeleted, outOK), done)
}

func TestCloseWhileParkedAndDisconnected(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(input{kind: inDisconnected})
	s.step(reply(inListed, outConnLoss), park)
	// No server to delete through: closing the session removes the node.
	s.step(input{kind: inCancel, err: ErrClosed, closing: true}, fail(ErrClosed), done)
}

func TestRefusedRequestFailsAndCleansUp(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	refused := errors.New("not authenticated")
	got := s.c.step(input{kind: inListed, outcome: outFailed, err: refused})
	if len(got) != 2 || got[0].kind != effFail || !errors.Is(got[0].err, refused) || got[1] != del(node(1, 5)) {
		t.Fatalf("got %v", got)
	}
	s.step(reply(inDeleted, outOK), done)
}

// Every reachable path resolves the acquisition exactly once and ends.
func TestEveryPathResolvesOnce(t *testing.T) {
	inputs := []input{
		{kind: inStart}, created(node(1, 5)), reply(inCreated, outConnLoss), reply(inCreated, outNoNode),
		reply(inParents, outOK), listed(1, node(1, 5)), listed(1, other(1), node(1, 5)), listed(1, other(1)),
		reply(inListed, outConnLoss), reply(inWatchSet, outOK), reply(inWatchSet, outNoNode),
		{kind: inWatchFired}, reply(inDeleted, outOK), reply(inDeleted, outConnLoss), {kind: inRelease},
		{kind: inCancel, err: context.Canceled}, {kind: inCancel, err: ErrClosed, closing: true},
		{kind: inDisconnected}, {kind: inReconnected}, {kind: inExpired}, {kind: inUntrusted}, {kind: inRetry},
		listed(2, node(2, 6)), created(node(2, 6)), {kind: inHandoff, pzxid: 3}, {kind: inTrusted}, {kind: inRefused},
		recovered(4, node(1, 5), node(1, 5)), {kind: inListed, children: []string{node(1, 5)}, foreign: true},
	}
	// A small deterministic walk: every sequence of up to 4 inputs after start.
	var walk func(prefix []int)
	count := 0
	walk = func(prefix []int) {
		s := newScript(t)
		s.c.decide = nextDecide // handoffs grant
		resolved := 0
		granted := false // the last step granted
		for _, i := range prefix {
			if inputs[i].kind == inRefused {
				// The engine refuses only the grant it was just handed,
				// which then never resolved anything.
				if !granted {
					continue
				}
				resolved--
			}
			granted = false
			for _, ef := range s.c.step(inputs[i]) {
				if ef.kind == effGrant || ef.kind == effFail {
					resolved++
				}
				granted = granted || ef.kind == effGrant
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
func countDecide(l *queue.Listing, self string) Decision {
	switch i := l.Index(self); {
	case i < 0:
		return Decision{Missing: true}
	case i < 2:
		return Decision{Holds: true}
	}
	return Decision{WatchChildren: true}
}

func TestChildrenWatchGrantsOnItsOwnReply(t *testing.T) {
	s := newScript(t)
	s.c.decide = countDecide
	watchChildren := effect{kind: effWatch, path: "/locks/a", children: true}
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(3), other(4), node(1, 5)), watchChildren)
	// A holder left between the listing and the watch: the watch's own
	// reply shows it, so no notification is needed.
	s.step(childrenWatched(107, other(4), node(1, 5)), grant(107))
	s.phase(phaseHeld)
}

func TestChildrenWatchWaitsThenRelists(t *testing.T) {
	s := newScript(t)
	s.c.decide = countDecide
	watchChildren := effect{kind: effWatch, path: "/locks/a", children: true}
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(3), other(4), node(1, 5)), watchChildren)
	s.step(childrenWatched(100, other(3), other(4), node(1, 5)))
	s.phase(phaseWaiting)
	s.step(input{kind: inWatchFired}, list)
	s.step(listed(109, other(3), node(1, 5)), grant(109))
}

func TestFixedSequenceNode(t *testing.T) {
	s := newScript(t)
	s.c.fixedSeq = "0000000005"
	s.step(input{kind: inStart}, effect{kind: effCreate, path: "/locks/a/_c_00000000-0000-4000-8000-000000000001-lock-0000000005"})
}

func nextDecide(l *queue.Listing, self string) Decision {
	d := seqDecide(l, self)
	d.Next = !d.Holds && !d.Missing
	return d
}

func TestHandoffGrantsWithoutListing(t *testing.T) {
	s := newScript(t)
	s.c.decide = nextDecide
	s.toWaiting()
	s.step(input{kind: inHandoff, pzxid: 120}, grant(120))
	s.phase(phaseHeld)
}

func TestHandoffWithoutNextLists(t *testing.T) {
	s := newScript(t)
	s.toWaiting() // seqDecide never sets Next
	s.step(input{kind: inHandoff, pzxid: 120}, list)
}

func TestHandoffAfterCancelIsIgnored(t *testing.T) {
	s := newScript(t)
	s.c.decide = nextDecide
	s.toWaiting()
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled), del(node(1, 5)))
	s.step(input{kind: inHandoff, pzxid: 120})
	s.phase(phaseDeleting)
}

// A node with a borrowed sequence number (a downgrade) is never made again:
// in a new session it would jump the queue.
func TestFixedSequenceNeverRecreated(t *testing.T) {
	fixed := func(s *script) {
		s.c.fixedSeq = "0000000005"
		s.step(input{kind: inStart}, effect{kind: effCreate, path: "/locks/a/_c_00000000-0000-4000-8000-000000000001-lock-0000000005"})
	}
	t.Run("expiry while waiting", func(t *testing.T) {
		s := newScript(t)
		fixed(s)
		s.step(created("_c_00000000-0000-4000-8000-000000000001-lock-0000000005"), list)
		s.step(listed(100, other(4), "_c_00000000-0000-4000-8000-000000000001-lock-0000000005"), watch(other(4)))
		s.step(reply(inWatchSet, outOK))
		s.step(input{kind: inExpired}, fail(ErrSessionExpired), done)
	})
	t.Run("create answered after expiry", func(t *testing.T) {
		s := newScript(t)
		fixed(s)
		s.step(input{kind: inExpired})
		name := "_c_00000000-0000-4000-8000-000000000001-lock-0000000005"
		s.step(created(name), fail(ErrSessionExpired), del(name))
	})
	t.Run("node gone", func(t *testing.T) {
		s := newScript(t)
		fixed(s)
		s.step(created("_c_00000000-0000-4000-8000-000000000001-lock-0000000005"), list)
		effs := s.c.step(listed(100, other(4)))
		if len(effs) != 2 || effs[0].kind != effFail || !errors.Is(effs[0].err, ErrLost) || effs[1] != done {
			t.Fatalf("effects %v, want a failure with ErrLost and done", effs)
		}
	})
	// A borrowed number is granted only beside the node it was borrowed
	// from: a downgrade's read node created after its writer's node left
	// (the writer released before the read lease was granted) would sort
	// ahead of a writer granted meanwhile.
	t.Run("lender gone", func(t *testing.T) {
		s := newScript(t)
		fixed(s)
		self := "_c_00000000-0000-4000-8000-000000000001-lock-0000000005"
		s.step(created(self), list)
		effs := s.c.step(listed(100, self, "_c_00000000-0000-4000-8000-0000000000ff-__WRIT__0000000006"))
		if len(effs) != 2 || effs[0].kind != effFail || !errors.Is(effs[0].err, ErrLost) || effs[1] != del(self) {
			t.Fatalf("effects %v, want a failure with ErrLost and the node's delete", effs)
		}
	})
	t.Run("lender listed", func(t *testing.T) {
		s := newScript(t)
		fixed(s)
		self := "_c_00000000-0000-4000-8000-000000000001-lock-0000000005"
		s.step(created(self), list)
		s.step(listed(100, self, "_c_00000000-0000-4000-8000-0000000000ff-__WRIT__0000000005"), grant(100))
	})
	// A create whose reply was lost and that the recovery read finds was
	// never made is not sent again: the node whose number it borrows may
	// be gone by now (the watchdog lost that lease, and the engine deleted
	// its node on reconnecting, before this recovery read was answered),
	// and a writer queued behind it may hold already. Likewise when our id
	// turns out taken, or when the lock path itself is gone.
	lostCreate := func(s *script) {
		fixed(s)
		s.step(reply(inCreated, outConnLoss), park)
		s.step(input{kind: inRetry}, recoverRead(1))
	}
	for _, c := range []struct {
		name string
		in   func(*script) input
	}{
		{"create never made", func(s *script) input {
			lostCreate(s)
			return recovered(100, "", other(6))
		}},
		{"id taken", func(s *script) input {
			lostCreate(s)
			in := recovered(100, "", other(6))
			in.foreign = true
			return in
		}},
		{"lock path gone", func(s *script) input {
			fixed(s)
			return reply(inCreated, outNoNode)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newScript(t)
			effs := s.c.step(c.in(s))
			if len(effs) != 2 || effs[0].kind != effFail || !errors.Is(effs[0].err, ErrLost) || effs[1] != done {
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
	s.step(input{kind: inStart}, create(1))
	s.step(reply(inCreated, outConnLoss), park)
	s.step(input{kind: inRetry}, recoverRead(1))
	refused := errors.New("zk: not authenticated")
	got := s.c.step(input{kind: inListed, outcome: outFailed, err: refused})
	if len(got) != 2 || got[0].kind != effFail || !errors.Is(got[0].err, refused) || got[1].kind != effPark {
		t.Fatalf("refused recovery read: effects %v, want a failure and a park", got)
	}
	got = s.c.step(input{kind: inRetry})
	if len(got) != 1 || got[0] != recoverRead(1) {
		t.Fatalf("retry: effects %v, want the recovery read", got)
	}
	got = s.c.step(input{kind: inListed, outcome: outFailed, err: refused})
	if len(got) != 1 || got[0].kind != effPark || !errors.Is(got[0].err, refused) {
		t.Fatalf("refused again: effects %v, want a park carrying the refusal", got)
	}
	s.step(input{kind: inRetry}, recoverRead(1))
	// Found at last: deleted, and the contender ends.
	s.step(recovered(101, node(1, 5), node(1, 5)), del(node(1, 5)))
	s.step(reply(inDeleted, outOK), done)
}

// A delete refused for an unexpected reason is never given up: the node
// would block the lock path for every client until the session ends.
func TestRefusedDeleteIsRetried(t *testing.T) {
	s := newScript(t)
	s.toHeld()
	s.step(input{kind: inRelease}, del(node(1, 5)))
	refused := errors.New("zk: buffer too small")
	got := s.c.step(input{kind: inDeleted, outcome: outFailed, err: refused})
	if len(got) != 1 || got[0].kind != effPark || !errors.Is(got[0].err, refused) {
		t.Fatalf("refused delete: effects %v, want a park carrying the refusal", got)
	}
	s.step(input{kind: inRetry}, del(node(1, 5)))
	// Gone meanwhile (say the first attempt was applied after all): released.
	s.step(reply(inDeleted, outNoNode), effect{kind: effReleased}, done)

	// A cancelled waiter's cleanup, likewise.
	s = newScript(t)
	s.toWaiting()
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled), del(node(1, 5)))
	got = s.c.step(input{kind: inDeleted, outcome: outFailed, err: refused})
	if len(got) != 1 || got[0].kind != effPark {
		t.Fatalf("refused cleanup delete: effects %v, want a park", got)
	}
	s.step(input{kind: inRetry}, del(node(1, 5)))
	s.step(reply(inDeleted, outOK), done)
}

// A Decider that calls a listed node missing would have the contender
// create a node per listing and leave each behind. The node is deleted
// instead, and the acquisition then fails with ErrBadDecision.
func TestMissingVerdictOnAListedNodeDeletesItThenFails(t *testing.T) {
	s := newScript(t)
	s.c.decide = func(*queue.Listing, string) Decision { return Decision{Missing: true} }
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4), node(1, 5)), del(node(1, 5)))
	effs := s.c.step(reply(inDeleted, outOK))
	if len(effs) != 2 || effs[0].kind != effFail || !errors.Is(effs[0].err, ErrBadDecision) || effs[1] != done {
		t.Fatalf("after the delete: effects %v, want a failure with ErrBadDecision and done", effs)
	}

	// A node that is really gone is created again, as before.
	s = newScript(t)
	s.c.decide = func(*queue.Listing, string) Decision { return Decision{Missing: true} }
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(listed(100, other(4)), create(2))
}

// Past 2^31 changes of a path that never empties, a new node's number wraps
// negative and sorts first: no grant on such an order, the acquisition
// fails and its node is deleted.
func TestWrappedListingFailsTheAcquisition(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, -2147483648)), list)
	effs := s.c.step(listed(100, other(2147483646), node(1, -2147483648)))
	if len(effs) != 2 || effs[0].kind != effFail || !errors.Is(effs[0].err, ErrSequenceWrapped) || effs[1] != del(node(1, -2147483648)) {
		t.Fatalf("on a wrapped listing: effects %v, want a failure with ErrSequenceWrapped and the node's delete", effs)
	}
	s.step(reply(inDeleted, outOK), done)

	// The same through a children watch's reply.
	s = newScript(t)
	s.c.decide = countDecide
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 2147483645)), list)
	s.step(listed(100, other(2147483643), other(2147483644), node(1, 2147483645)), effect{kind: effWatch, path: "/locks/a", children: true})
	effs = s.c.step(childrenWatched(107, other(-2147483648), node(1, 2147483645)))
	if len(effs) != 2 || effs[0].kind != effFail || !errors.Is(effs[0].err, ErrSequenceWrapped) || effs[1] != del(node(1, 2147483645)) {
		t.Fatalf("on a wrapped children watch: effects %v, want a failure with ErrSequenceWrapped and the node's delete", effs)
	}
}

// A reply for one contender alone may come without a parsed listing (the
// engine parses only the listings it shares): the contender parses it.
func TestListedWithoutAParsedListing(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(created(node(1, 5)), list)
	s.step(input{kind: inListed, children: []string{other(4), node(1, 5)}, pzxid: 100}, watch(other(4)))
	s.step(reply(inWatchSet, outNoNode), list)
	s.step(input{kind: inListed, children: []string{node(1, 5)}, pzxid: 101}, grant(101))
}

// A delete the ACL refuses is not retried: asking again would be refused
// for as long as the session lives. A release fails with the refusal
// (ErrNoAuth); a waiter's cleanup ends; the node is left to the session.
func TestDeleteRefusedByACLEnds(t *testing.T) {
	noAuth := fmt.Errorf("wrapped: %w", zk.ErrNoAuth)
	s := newScript(t)
	s.toHeld()
	s.step(input{kind: inRelease}, del(node(1, 5)))
	got := s.c.step(input{kind: inDeleted, outcome: outFailed, err: noAuth})
	if len(got) != 2 || got[0].kind != effReleased || !errors.Is(got[0].err, ErrNoAuth) ||
		got[1].kind != effDone || !errors.Is(got[1].err, zk.ErrNoAuth) {
		t.Fatalf("release refused: effects %v, want released with ErrNoAuth, then done", got)
	}

	s = newScript(t)
	s.toWaiting()
	s.step(input{kind: inCancel, err: context.Canceled}, fail(context.Canceled), del(node(1, 5)))
	got = s.c.step(input{kind: inDeleted, outcome: outFailed, err: noAuth})
	if len(got) != 1 || got[0].kind != effDone {
		t.Fatalf("cleanup refused: effects %v, want done", got)
	}
}

// A recovery read refused for lack of rights (the create's fate unknown,
// and the lock path no longer readable to us) fails the acquisition and
// ends: looking for the node again would be refused for as long as the
// session lives. Other refusals are read again after a backoff.
func TestRefusedRecoveryReadEnds(t *testing.T) {
	s := newScript(t)
	s.step(input{kind: inStart}, create(1))
	s.step(reply(inCreated, outConnLoss), park)
	s.step(input{kind: inRetry}, effect{kind: effRecover, path: "/locks/a", id: "00000000-0000-4000-8000-000000000001"})
	got := s.c.step(input{kind: inListed, outcome: outFailed, err: zk.ErrNoAuth})
	if len(got) != 2 || got[0].kind != effFail || !errors.Is(got[0].err, ErrNoAuth) ||
		got[1].kind != effDone || !errors.Is(got[1].err, ErrNoAuth) {
		t.Fatalf("refused recovery read: effects %v, want a failure with ErrNoAuth, then done (logging it)", got)
	}
}

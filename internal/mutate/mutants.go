package main

// mutant is one planted bug, made of one change or a few.
type mutant struct {
	name    string
	class   string // the class of bug it re-plants
	changes []change
	checks  []check // tried in order; the first that fails catches it
}

// change is one edit: old, found once among the tree's Go files (in a file
// named file, when set, wherever it sits), becomes new.
type change struct {
	file, old, new string
}

// sim is the simulator's check; simOnly counts only the failures of one
// of its checkers; test names tests of one package.
var sim = simCheck{}

func simOnly(kind string) simCheck { return simCheck{kind: kind} }

func test(pkg, run string) testCheck { return testCheck{pkg: pkg, pattern: run} }

// mutants are the bugs the checkers must catch. Each names the class of
// bug it re-plants; the simulator is tried first, for the budget, and then
// the tests that exist for the class.
var mutants = []mutant{
	{
		name:  "handoff-past-reader",
		class: "the local handoff past a reader: a waiter behind a read node is told it is next, and the engine hands it the lock on that reader's delete while a fellow reader still holds",
		changes: []change{
			{"listing.go", "exclusive := watch.Kind == KindMutex || watch.Kind == KindWrite\n", "exclusive := watch.Kind == KindMutex || watch.Kind == KindWrite || watch.Kind == KindRead\n"},
			{"handoff.go", "exclusive := n.Kind == queue.KindMutex || n.Kind == queue.KindWrite || n.Kind == queue.KindLatch", "exclusive := n.Kind == queue.KindMutex || n.Kind == queue.KindWrite || n.Kind == queue.KindLatch || n.Kind == queue.KindRead"},
		},
		checks: []check{sim, test("./queue", "."), test("./lock", "Handoff")},
	},
	{
		name:    "handoff-beside-downgrade",
		class:   "the local handoff beside a downgrade: a borrowed number on the path does not stop it",
		changes: []change{{"handoff.go", "return ok && exclusive && c.borrowed[node[:i]] == 0", "return ok && exclusive"}},
		checks:  []check{sim, test("./engine/internal/core", "TestCoreInteractions")},
	},
	{
		name:    "lost-late",
		class:   "Lost closes only when the loop hears of the expiry: the watchdog's lapse loses no lease",
		changes: []change{{"watchdog.go", "\tfor _, l := range held {\n\t\tl.markLost(cause)\n\t}", "\tfor range held {\n\t}"}},
		checks:  []check{sim, test("./engine", "Trust|Lapse")},
	},
	{
		name:    "lost-node-deleted-at-reconnect",
		class:   "a lease lost to a lapse has its node deleted as soon as the session answers again: the next holder is let in inside the margin the lost one was promised to stop in",
		changes: []change{{"machine.go", "if c.phase != Parked || c.stopping && c.retry == retryDelete {", "if c.phase != Parked {"}},
		checks:  []check{sim, test("./engine/internal/contender", "Untrusted"), test("./engine", "TestLapseIsNotExpiry")},
	},
	{
		name:    "grant-old-session",
		class:   "a grant on an expired session's listing: the watchdog admits a lease of a session it does not follow",
		changes: []change{{"watchdog.go", "if t.stopped || t.lapsed || session != t.session {", "if t.stopped || t.lapsed {"}},
		checks:  []check{sim, test("./engine", "Trust|Admit")},
	},
	{
		name:    "grant-after-deadline",
		class:   "a grant after the trust deadline: admission does not read the clock",
		changes: []change{{"watchdog.go", "\tif t.clock() >= t.deadline() {\n\t\tt.lapse(ErrLost)\n\t\treturn false\n\t}\n\tt.held[l]", "\tt.held[l]"}},
		checks:  []check{sim, test("./engine", "Trust|Admit")},
	},
	{
		name:    "downgrade-recreated",
		class:   "a downgrade's read node created again after its writer is gone (a lost create reply's recovery found it not made)",
		changes: []change{{"machine.go", "\t\tcase c.borrowed != \"\":\n\t\t\t// A node with a borrowed number is made only while the node", "\t\tcase false:\n\t\t\t// A node with a borrowed number is made only while the node"}},
		checks:  []check{sim, test("./lock", "TestDowngradeNotMadeAfterItsWriterIsGone|Downgrade"), test("./engine/internal/contender", ".")},
	},
	{
		name:    "borrowed-without-lender",
		class:   "a borrowed number granted without its lender listed beside it",
		changes: []change{{"machine.go", "\tif c.borrowed == \"\" {\n\t\treturn true\n\t}\n\tif _, named := queue.Parse(c.borrowed)", "\tif true {\n\t\treturn true\n\t}\n\tif _, named := queue.Parse(c.borrowed)"}},
		checks:  []check{sim, test("./lock", "Downgrade|Borrow"), test("./engine/internal/contender", ".")},
	},
	{
		name:    "stray-pin-kept",
		class:   "a stray pin never deleted: a pin made under a session whose view an expiry forgot is kept",
		changes: []change{{"prediction.go", "\t\tc.strayPins[d.Path] = false\n\t\tc.unpinStray(d.Path)", "\t\tdelete(c.strayPins, d.Path)"}},
		checks:  []check{sim, test("./engine/internal/core", "TestCoreInteractions")},
	},
	{
		name:    "pass-after-loss",
		class:   "a cohort pass after the carrier's loss: neither the watchdog's word nor the carrier's end stops passing",
		changes: []change{{"machine.go", "bounded := !in.Trusted || in.CarrierLost || c.sealed ||", "bounded := c.sealed ||"}},
		checks:  []check{sim, test("./engine/internal/cohort", "TestCohortInteractions"), test("./engine", "Cohort")},
	},
	{
		name:    "pass-overtakes-queued",
		class:   "under YieldToOthers, a cohort pass before the listing that shows who else waits is answered, overtaking a client queued first",
		changes: []change{{"machine.go", "\tcase (pastHold || m.cfg.YieldToOthers) && !c.watchKnown && !c.foreign:\n", "\tcase pastHold && !c.watchKnown && !c.foreign:\n"}},
		checks:  []check{sim, test("./engine/internal/cohort", "TestCohortInteractions"), test("./engine", "Cohort")},
	},
	{
		name:    "pass-past-hold-unlisted",
		class:   "past MaxHold, a cohort pass before the listing that tells who else waits is answered, overtaking a client queued since the grant",
		changes: []change{{"machine.go", "\tcase (pastHold || m.cfg.YieldToOthers) && !c.watchKnown && !c.foreign:\n", "\tcase m.cfg.YieldToOthers && !c.watchKnown && !c.foreign:\n"}},
		checks:  []check{sim, test("./engine/internal/cohort", "TestCohortInteractions"), test("./engine", "Cohort")},
	},
	{
		name:    "pass-past-hold-ignores-seen",
		class:   "past MaxHold, a cohort keeps passing though another client is known to wait (in the listing, or by the watch's firing)",
		changes: []change{{"machine.go", "\tcase bounded, pastHold && (c.foreign || !c.watchAsked):\n", "\tcase bounded:\n"}},
		checks:  []check{sim, test("./engine/internal/cohort", "TestCohortInteractions"), test("./engine", "Cohort")},
	},
	{
		name:    "pass-ignores-others",
		class:   "a cohort keeps passing past MaxHold from its grant while another client waits (the hold bound counted from the last pass)",
		changes: []change{{"machine.go", "\t\tc.passes++\n", "\t\tc.passes++\n\t\tc.grantedAt = in.Now\n"}},
		checks:  []check{sim, test("./engine/internal/cohort", "TestCohortInteractions"), test("./engine", "Cohort"), test("./stress", "TwoProcesses")},
	},
	{
		name:    "yield-ignores-others",
		class:   "under YieldToOthers, a cohort keeps passing while another client is seen waiting",
		changes: []change{{"machine.go", "\tcase m.cfg.YieldToOthers && c.foreign:\n", "\tcase false:\n"}},
		checks:  []check{sim, test("./engine/internal/cohort", "TestCohortInteractions"), test("./engine", "Cohort")},
	},
	{
		name:  "linger-ignores-others",
		class: "a lingering node kept while another client is seen waiting (the scripts and the real-server tests judge it; to the simulator it is a wait to the linger's end)",
		changes: []change{
			{"machine.go", "\tif c.lingering && c.foreign {\n", "\tif false && c.lingering && c.foreign {\n"},
			{"machine.go", "\tcase c.foreign || !in.Trusted || in.CarrierLost || c.sealed || in.Now >= c.lingerUntil:\n", "\tcase !in.Trusted || in.CarrierLost || c.sealed || in.Now >= c.lingerUntil:\n"},
		},
		checks: []check{test("./engine/internal/cohort", "TestCohortInteractions"), test("./engine", "CohortLinger")},
	},
	{
		name:    "carrier-loss-unheard",
		class:   "a cohort's node lost without the machine hearing of it: its holder keeps a lease on a node gone, and the machine may pass it on",
		changes: []change{{"cohorts.go", "\t\tc.stepCohorts(&cohort.Input{Kind: cohort.Lost, Carrier: attempt, Err: err})\n", ""}},
		checks:  []check{sim, test("./engine", "Cohort")},
	},
	{
		name:    "pass-not-admitted",
		class:   "a pass granted without the watchdog's admission: a lapse of trust leaves the passed lease's Lost() open until the loop hears of it",
		changes: []change{{"runtime.go", "\tif !t.e.watchdog.admit(l, session) {\n", "\tif g.Carrier == 0 && !t.e.watchdog.admit(l, session) {\n"}},
		checks:  []check{test("./engine", "TestLoopHeldStill")},
	},
	{
		name:    "linger-ignores-a-waiter",
		class:   "a waiter of this engine joining a lingering node is not passed it: it waits for the linger's end",
		changes: []change{{"machine.go", "\tcase c.lingering && !c.vouching:\n", "\tcase false && c.lingering && !c.vouching:\n"}},
		checks:  []check{test("./engine/internal/cohort", "TestCohortInteractions"), test("./engine", "CohortLinger")},
	},
	{
		name:    "linger-watch-unheard",
		class:   "a lingering node's watch firing is not handed to the cohorts: another client waits for the node until the linger's end",
		changes: []change{{"watches.go", "\tc.cohortWatchFired(ev.Path)\n", ""}},
		checks:  []check{sim, test("./engine", "CohortLinger")},
	},
	{
		name:    "lender-by-number",
		class:   "a borrowed number granted beside any exclusive node of that number, not its own lender: another incarnation's node 0 admits a downgrade's reader",
		changes: []change{{"machine.go", "\tif _, named := queue.Parse(c.borrowed); named {\n", "\tif _, named := queue.Parse(c.borrowed); named && false {\n"}},
		checks:  []check{test("./engine/internal/contender", "TestFixedSequenceNeverRecreated")},
	},
	{
		name:    "token-without-pass",
		class:   "a token without the pass number: leases passed within a cohort share their carrier's token",
		changes: []change{{"runtime.go", "token: g.Token<<core.PassBits | int64(g.Pass)}", "token: g.Token << core.PassBits}"}},
		checks:  []check{sim, test("./engine", "Cohort")},
	},
	{
		name:    "refused-delete-abandoned",
		class:   "a refused delete abandoned: the node is forgotten, left to block the path until the session ends",
		changes: []change{{"machine.go", "\teffs := c.park(retryDelete)\n\teffs[0].Err = fmt.Errorf(\"turnstile: delete %s: %w\", c.full, in.Err)\n\treturn effs", "\tc.clearNode()\n\treturn c.afterDelete()"}},
		checks:  []check{sim, test("./engine/internal/contender", "."), test("./engine", "Refused|Delete")},
	},
	{
		name:    "lost-delete-abandoned",
		class:   "a delete whose reply was lost in a disconnection abandoned: the node may still be there",
		changes: []change{{"machine.go", "\tcase input.ConnLoss:\n\t\treturn c.park(retryDelete)", "\tcase input.ConnLoss:\n\t\tc.clearNode()\n\t\treturn c.afterDelete()"}},
		checks:  []check{sim},
	},
	{
		name:    "predicate-off-by-one",
		class:   "an off-by-one in a predicate: a semaphore of n admits n+1, a mutex two",
		changes: []change{{"listing.go", "\tcase i < n:\n", "\tcase i <= n:\n"}},
		checks:  []check{sim, test("./queue", ".")},
	},
	{
		name:    "read-predicate-off-by-one",
		class:   "an off-by-one in the read predicate: a writer at the head of the queue does not keep readers out",
		changes: []change{{"listing.go", "if j := l.lastExclusiveBefore(l.firstWithSeq(i)); j >= 0 {", "if j := l.lastExclusiveBefore(l.firstWithSeq(i)); j > 0 {"}},
		checks:  []check{sim, test("./queue", ".")},
	},
	{
		name:    "cancel-leaves-node",
		class:   "a cancel that leaves its node: a contender given up deletes nothing",
		changes: []change{{"machine.go", "\tcase c.node != \"\":\n\t\tc.phase = Deleting\n\t\treturn []Effect{{Kind: Delete, Path: c.full}}\n\tcase c.recovering:", "\tcase c.recovering:"}},
		checks:  []check{sim, test("./engine/internal/core", "TestCoreInteractions"), test("./lock", "Cancel")},
	},
	{
		name:    "adopt-foreign-node",
		class:   "a release that deletes another session's node: the recovery read adopts a node with our id whatever session owns it",
		changes: []change{{"executor.go", "case stat.EphemeralOwner == e.conn.SessionID():", "case stat.EphemeralOwner != 0:"}},
		checks:  []check{sim, test("./engine", "Recover|Foreign|Owner")},
	},
	{
		name:    "prediction-ignores-count",
		class:   "the listing-free cycle grants on a create whose number another client's create moved",
		changes: []change{{"prediction.go", "if !ok || n.Seq != v.expectSeq {", "if !ok {"}},
		checks:  []check{sim, test("./engine/internal/core", "TestCoreInteractions"), test("./engine", "ListingFree")},
	},
	{
		name:    "prediction-while-changing",
		class:   "the listing-free cycle predicts while a create or delete of ours on the path is in flight, whose order the server may not keep",
		changes: []change{{"prediction.go", "v.known && c.changing[en.c.LockPath()] == 0 &&", "v.known &&"}},
		checks:  []check{sim, test("./engine/internal/core", "TestCoreInteractions"), test("./engine", "ListingFree")},
	},
	{
		name:    "stale-view-try",
		class:   "a try refused on the listing-free cycle's view: a child gone since keeps every later try out (issue 22)",
		changes: []change{{"machine.go", "\tcase c.tryOnly && in.Predicted:\n", "\tcase false && c.tryOnly && in.Predicted:\n"}},
		checks:  []check{sim, test("./engine/internal/core", "TestCoreInteractions"), test("./lock", "TestTryAcquireAfterAnotherClientLeft")},
	},
	{
		name:    "follower-answers-trusted",
		class:   "a follower's answer counted as proof that the session lives at the leader (issue 22's Lost() after another grant, behind a partition)",
		changes: []change{{"conn.go", "\t\tif c.leader && sent >= c.leaderFrom {\n\t\t\tc.watchdog.Answered(sent)", "\t\tif true {\n\t\t\tc.watchdog.Answered(sent)"}},
		checks:  []check{sim, test("./engine/internal/serverconn", "TestTrackedConn"), test("./internal/partition", "TestLostBeforeOtherGrantFollowerCut")},
	},
	{
		name:    "sync-chain-anchor-too-late",
		class:   "a follower's sync answer taken to prove a touch at the leader at its own send time, not at the chain's earlier sync: the deadline runs past the server's expiry",
		changes: []change{{"conn.go", "if anchor, ok := c.syncs.answered(sent, now, c.syncGap()); ok {\n\t\t\t\tc.watchdog.Answered(anchor)", "if _, ok := c.syncs.answered(sent, now, c.syncGap()); ok {\n\t\t\t\tc.watchdog.Answered(sent)"}},
		checks:  []check{sim, test("./engine/internal/serverconn", "TestTrackedConnSyncChain|TestKeeperSyncs")},
	},
	{
		name:    "semaphore-lease-without-guard",
		class:   "a semaphore's lease acquisition goes on after its guard was lost in a lapse: its lease node is made again without the guard, beside the next guard holder's (two grants on one token), or behind a Curator acquirer's, which waits for the count holding the guard (issue 22's liveness fault beside Curator)",
		changes: []change{leaseWithoutGuard},
		checks:  []check{sim, test("./lock", "TestSemaphoreWaiterComesBackThroughTheGuardAfterALapse"), test("./internal/interop", "TestTurnstileSemaphoreLapseWithALostLeaseCreateBesideCurator")},
	},
	{
		// The same bug: the token check mostly sees it first, so the
		// simulator's liveness checker is asked alone.
		name:    "semaphore-curator-deadlock",
		class:   "715140e undone, for the simulator's liveness checker alone: a lease node made again without the guard after a lapse, behind the Curator peer's, which holds the guard and waits for the count while turnstile's waits for its position (issue 22's deadlock beside Curator)",
		changes: []change{leaseWithoutGuard},
		checks:  []check{simOnly("liveness"), test("./internal/interop", "TestTurnstileSemaphoreLapseWithALostLeaseCreateBesideCurator")},
	},
	{
		// Only reordering shows it: sent in order, two creates of one path
		// are numbered in order even when both are in flight, so the
		// simulator's FIFO checker is asked alone, and it sees the fault
		// only because its clients let a later request overtake.
		name:    "creates-fly-together",
		class:   "two creates on one lock path in flight at once: the group commit sends a second create before the first is answered, and the server may take them in either order, queueing the later caller first",
		changes: []change{{"groupcommit.go", "if held[lockPath] || (lockPath != \"\" && g.creating[lockPath] > 0 && !inBatch[lockPath]) {", "if held[lockPath] {"}},
		checks:  []check{simOnly("fifo"), test("./engine/internal/core", "TestGroupCommit")},
	},
	{
		name:    "linger-try-blocked-by-own-node",
		class:   "a try of another recipe of the engine finds the engine's own lingering node in its way: the node is not sent back first",
		changes: []change{{"cohorts.go", "\tif !cmd.TryOnly || c.cfg.Cohort.Linger == 0 {\n\t\treturn false\n\t}\n\tc.stepCohorts(&cohort.Input{Kind: cohort.Clear", "\tif true {\n\t\treturn false\n\t}\n\tc.stepCohorts(&cohort.Input{Kind: cohort.Clear"}},
		checks:  []check{test("./engine", "TestCohortLingerTryOfAnotherRecipeIsGranted")},
	},
	{
		name:    "linger-try-ignores-the-mark",
		class:   "another engine's try fails on a lingering node, held by no one: the mark is not read",
		changes: []change{{"vocabulary.go", "func Lingering(version int32) bool { return version%2 == 1 }", "func Lingering(version int32) bool { return false }"}},
		checks:  []check{test("./engine", "TestCohortLingerTryOfAnotherEngineIsGranted"), test("./engine/internal/contender", "TestTryOnly")},
	},
	{
		name:    "mark-failure-unheard",
		class:   "a lingering node whose mark failed lingers on: its even version reads as held, and another engine's try fails with nobody holding the lock",
		changes: []change{{"replies.go", "\t\tc.stepCohorts(&cohort.Input{Kind: cohort.MarkFailed, Carrier: d.Contender})\n", "\t\t_ = cohort.MarkFailed\n"}},
		checks:  []check{test("./engine/internal/core", "TestCohortLingerEndsOrMarksAgainWhenTheMarkFails"), test("./engine", "TestCohortLingerTryOfAnotherEngineIsGrantedThoughTheMarkIsRefused")},
	},
	{
		name:    "try-reads-revoked-as-lingering",
		class:   "a try reads a held node that a revocation request wrote (its version odd) as lingering: it waits on a held lock and is granted when the holder lets go",
		changes: []change{{"machine.go", "if peeked && (!Lingering(in.Version) || in.Revoked) {", "if peeked && !Lingering(in.Version) {"}},
		checks:  []check{sim, test("./engine", "TestTryFailsOnAHolderAskedToLetGo")},
	},
	{
		name:    "parked-turn-waits-though-fired",
		class:   "a turn parked for the listing under YieldToOthers waits for its reply though the watch fired meanwhile: another client waits a reply longer, and the node is kept, held by no one, after its watch fired",
		changes: []change{{"machine.go", "case !c.lingering && c.parked && c.foreign:", "case false && c.parked:"}},
		checks:  []check{sim, test("./engine/internal/cohort", "TestCohortInteractions")},
	},
	{
		name:    "linger-mark-kept-while-held",
		class:   "a lingering node passed again stays marked when another client shows: that client's try waits on a held lock",
		changes: []change{{"machine.go", "\tif c.marked && c.foreign && !c.lingering && c.carrier != 0 && !c.unmarked {", "\tif false {"}},
		checks:  []check{test("./engine/internal/cohort", "TestCohortInteractions"), test("./engine", "TestCohortLingerTryOfAnotherEngineIsGranted")},
	},
	{
		name:    "members-unreported",
		class:   "the callers a cohort serves go unreported: observers and metrics count the cohort's nodes, not its callers",
		changes: []change{{"cohorts.go", "\tif c.cfg.Observe {\n\t\tr.ID, r.Member = id, true\n", "\tif false {\n\t\tr.ID, r.Member = id, true\n"}},
		checks:  []check{sim, test("./metrics", "TestCohortMetrics"), test("./lock", "TestObserverReportsEachAcquisitionUnderOneID")},
	},
}

// leaseWithoutGuard undoes 715140e: a semaphore's lease acquisition goes on
// when its guard is lost.
var leaseWithoutGuard = change{"sem.go", "\t\tif guard.Err() != nil {\n\t\t\tabandon(errGuardLost)", "\t\tif false {\n\t\t\tabandon(errGuardLost)"}

package main

// mutant is one planted bug: old, found once among the tree's Go files
// (in a file named file, when set, wherever it sits), becomes new.
type mutant struct {
	name   string
	class  string // the class of bug it re-plants
	file   string
	old    string
	new    string
	checks []check // tried in order; the first that fails catches it
}

// sim is the simulator's check; test names tests of one package.
var sim = simCheck{}

func test(pkg, run string) testCheck { return testCheck{pkg: pkg, pattern: run} }

// mutants are the bugs the checkers must catch. Each names the class of
// bug it re-plants; the simulator is tried first, for the budget, and then
// the tests that exist for the class.
var mutants = []mutant{
	{
		name:   "handoff-past-reader",
		class:  "the local handoff past a reader: a read node counted as exclusive, so a writer is handed the lock while a fellow reader still holds",
		file:   "handoff.go",
		old:    "exclusive := n.Kind == queue.KindMutex || n.Kind == queue.KindWrite || n.Kind == queue.KindLatch",
		new:    "exclusive := n.Kind == queue.KindMutex || n.Kind == queue.KindWrite || n.Kind == queue.KindLatch || n.Kind == queue.KindRead",
		checks: []check{sim, test("./engine/internal/core", "TestCoreInteractions")},
	},
	{
		name:   "handoff-beside-downgrade",
		class:  "the local handoff beside a downgrade: a borrowed number on the path does not stop it",
		file:   "handoff.go",
		old:    "return ok && exclusive && c.borrowed[node[:i]] == 0",
		new:    "return ok && exclusive",
		checks: []check{sim, test("./engine/internal/core", "TestCoreInteractions")},
	},
	{
		name:   "lost-late",
		class:  "Lost closes only when the loop hears of the expiry: the watchdog's lapse loses no lease",
		file:   "trust.go",
		old:    "\tfor _, l := range held {\n\t\tl.markLost(ErrLost)\n\t}",
		new:    "\tfor range held {\n\t}",
		checks: []check{sim, test("./engine", "Trust|Lapse")},
	},
	{
		name:   "grant-old-session",
		class:  "a grant on an expired session's listing: the watchdog admits a lease of a session it does not follow",
		file:   "trust.go",
		old:    "if t.stopped || t.lapsed || session != t.session {",
		new:    "if t.stopped || t.lapsed {",
		checks: []check{sim, test("./engine", "Trust|Admit")},
	},
	{
		name:   "grant-after-deadline",
		class:  "a grant after the trust deadline: admission does not read the clock",
		file:   "trust.go",
		old:    "\tif t.clock() >= t.deadline() {\n\t\tt.lapse()\n\t\treturn false\n\t}",
		new:    "",
		checks: []check{sim, test("./engine", "Trust|Admit")},
	},
	{
		name:   "downgrade-recreated",
		class:  "a downgrade's read node created again after its writer is gone (a lost create reply's recovery found it not made)",
		file:   "machine.go",
		old:    "\t\tcase c.fixedSeq != \"\":\n\t\t\t// A node with a borrowed number is made only while the node",
		new:    "\t\tcase false:\n\t\t\t// A node with a borrowed number is made only while the node",
		checks: []check{sim, test("./engine/...", "Borrow|Downgrade"), test("./lock", "Downgrade")},
	},
	{
		name:   "borrowed-without-lender",
		class:  "a borrowed number granted without its lender listed beside it",
		file:   "machine.go",
		old:    "\tif c.fixedSeq == \"\" {\n\t\treturn true\n\t}\n\tself, ok := queue.Parse(c.node)",
		new:    "\tif true {\n\t\treturn true\n\t}\n\tself, ok := queue.Parse(c.node)",
		checks: []check{sim, test("./engine/...", "Borrow|Downgrade|Lender"), test("./lock", "Downgrade|Borrow")},
	},
	{
		name:   "stray-pin-kept",
		class:  "a stray pin never deleted: a pin made under a session whose view an expiry forgot is kept",
		file:   "prediction.go",
		old:    "\t\tc.strayPins[d.Path] = false\n\t\tc.unpinStray(d.Path)",
		new:    "\t\tdelete(c.strayPins, d.Path)",
		checks: []check{sim, test("./engine/internal/core", "TestCoreInteractions")},
	},
	{
		name:   "pass-after-loss",
		class:  "a cohort pass after the carrier's loss: neither the watchdog's word nor the carrier's end stops passing",
		file:   "cohort.go",
		old:    "case !trusted || carrier.Err() != nil || c.sealed ||",
		new:    "case c.sealed ||",
		checks: []check{sim, test("./engine", "Cohort")},
	},
	{
		name:   "pass-overtakes-queued",
		class:  "a cohort pass before the listing that shows who else waits is answered, overtaking a client queued first",
		file:   "cohort.go",
		old:    "\tcase !c.watchKnown:\n",
		new:    "\tcase false:\n",
		checks: []check{sim, test("./engine", "Cohort")},
	},
	{
		name:   "pass-ignores-others",
		class:  "a cohort keeps passing while another client is seen waiting",
		file:   "cohort.go",
		old:    "\tcase c.othersWait():\n",
		new:    "\tcase false && c.othersWait():\n",
		checks: []check{sim, test("./engine", "Cohort"), test("./stress", "TwoProcesses")},
	},
	{
		name:   "token-without-pass",
		class:  "a token without the pass number: leases passed within a cohort share their carrier's token",
		file:   "lease.go",
		old:    "return l.token<<tokenPassBits | int64(l.pass)",
		new:    "return l.token << tokenPassBits",
		checks: []check{sim, test("./engine", "Cohort")},
	},
	{
		name:   "refused-delete-abandoned",
		class:  "a refused delete abandoned: the node is forgotten, left to block the path until the session ends",
		file:   "machine.go",
		old:    "\teffs := c.park(retryDelete)\n\teffs[0].Err = fmt.Errorf(\"turnstile: delete %s: %w\", c.full, in.Err)\n\treturn effs",
		new:    "\tc.clearNode()\n\treturn c.afterDelete()",
		checks: []check{sim, test("./engine/...", "Refused|Delete"), test("./lock", "Refused|Delete")},
	},
	{
		name:   "lost-delete-abandoned",
		class:  "a delete whose reply was lost in a disconnection abandoned: the node may still be there",
		file:   "machine.go",
		old:    "\tcase input.ConnLoss:\n\t\treturn c.park(retryDelete)",
		new:    "\tcase input.ConnLoss:\n\t\tc.clearNode()\n\t\treturn c.afterDelete()",
		checks: []check{sim},
	},
	{
		name:   "predicate-off-by-one",
		class:  "an off-by-one in a predicate: a semaphore of n admits n+1, a mutex two",
		file:   "listing.go",
		old:    "\tcase i < n:\n",
		new:    "\tcase i <= n:\n",
		checks: []check{sim, test("./queue", ".")},
	},
	{
		name:   "read-predicate-off-by-one",
		class:  "an off-by-one in the read predicate: a writer at the head of the queue does not keep readers out",
		file:   "listing.go",
		old:    "if j := l.lastExclusiveBefore(l.firstWithSeq(i)); j >= 0 {",
		new:    "if j := l.lastExclusiveBefore(l.firstWithSeq(i)); j > 0 {",
		checks: []check{sim, test("./queue", ".")},
	},
	{
		name:   "cancel-leaves-node",
		class:  "a cancel that leaves its node: a contender given up deletes nothing",
		file:   "machine.go",
		old:    "\tcase c.node != \"\":\n\t\tc.phase = Deleting\n\t\treturn []Effect{{Kind: Delete, Path: c.full}}\n\tcase c.recovering:",
		new:    "\tcase c.recovering:",
		checks: []check{sim, test("./engine/internal/core", "TestCoreInteractions"), test("./lock", "Cancel")},
	},
	{
		name:   "adopt-foreign-node",
		class:  "a release that deletes another session's node: the recovery read adopts a node with our id whatever session owns it",
		file:   "executor.go",
		old:    "case stat.EphemeralOwner == e.conn.SessionID():",
		new:    "case true:",
		checks: []check{sim, test("./engine", "Recover|Foreign|Owner")},
	},
	{
		name:   "prediction-ignores-count",
		class:  "the listing-free cycle grants on a create whose number another client's create moved",
		file:   "prediction.go",
		old:    "if !ok || n.Seq != v.expectSeq {",
		new:    "if !ok {",
		checks: []check{sim, test("./engine/internal/core", "TestCoreInteractions"), test("./engine", "ListingFree")},
	},
	{
		name:   "prediction-while-changing",
		class:  "the listing-free cycle predicts while a create or delete of ours on the path is in flight, whose order the server may not keep",
		file:   "prediction.go",
		old:    "v.known && c.changing[en.c.LockPath()] == 0 &&",
		new:    "v.known &&",
		checks: []check{sim, test("./engine/internal/core", "TestCoreInteractions"), test("./engine", "ListingFree")},
	},
}

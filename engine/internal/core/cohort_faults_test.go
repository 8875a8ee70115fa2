package core

import "testing"

// lingeringA is where each script below starts: a's cohort's node A,
// granted and released, lingers with its timer armed.
const lingeringA = `
connect session=1
----
?

trust
----
?

acquire a cohort
----
?

created A seq=1
----
?

listed children=(A) pzxid=7
----
acquired a token=7

release a
----
timer 2 after 50ms
`

// A try that joins a lingering node to be passed it, whose Hand the
// watchdog refuses (trust lapsed between the Vouch and the Admit), must
// fail with would-block: it waits for no node of its own (cohort.Join's
// Try). It must not queue a node and wait as a blocking acquisition.
func TestCohortRefusedTryStaysATry(t *testing.T) {
	runLingerScript(t, lingeringA+`
refuse on
----
ok

acquire t try cohort
----
acquired: t turnstile: lock is held

refuse off
----
ok

deleted A zxid=9
----
?

`)
}

// A try of another recipe on a path where a cohort's node lingers is held
// back until the node's deletion is answered (tryBesideLinger). Held
// back, it is an acquisition like any other: its context is followed, and
// its end cancels it at once, as it does a contender whose request is in
// flight. Here the deletion waits for the connection, and the try's
// context ends meanwhile.
func TestCohortHeldTryCancelledByItsContext(t *testing.T) {
	runLingerScript(t, lingeringA+`
acquire t try ctx=g
----
follow ctx g

disconnect
----
?

deleted A outcome=connection-loss
----
?

cancel ctx=g
----
acquired: t context canceled
`)
}

// A node lingering after its holder's release is held by no one: Lingering
// lists it, and Unheld of the attempts watching the path (what the
// simulator's check of linger reads once the loop took the watch's
// notification) names it; else that check could never fail for a node
// that lingers after a release.
func TestCohortLingeringNodeIsHeldByNoOne(t *testing.T) {
	runLingerScript(t, lingeringA+`
lingering
----
! unheld ""

lingering
----
! lingering []
`)
}

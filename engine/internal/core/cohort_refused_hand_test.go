package core

import (
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// handRefusingTrust admits every node's own grant but refuses every Hand
// of a cohort's node to a member (a grant naming its Carrier): the lapse
// the real watchdog can have, on its own timer, between the carrier's
// Admit and its first member's.
type handRefusingTrust struct{ *coreScriptWatchdog }

func (t handRefusingTrust) Admit(g Grant, session int64) bool {
	return g.Carrier == 0 && t.coreScriptWatchdog.Admit(g, session)
}

// runRefusedHandScript runs script on a core under YieldToOthers whose
// watchdog refuses every Hand; each directive's expected output, when
// not "?", must appear in what the core decided, and "!" followed by
// text must not.
func runRefusedHandScript(t *testing.T, script string) {
	s := newCoreScriptWith(func(cfg *Config) { cfg.Cohort.YieldToOthers = true },
		func(t *coreScriptWatchdog) Admitter { return handRefusingTrust{t} })
	var failed []string
	datadriven.RunTestFromString(t, script, func(t *testing.T, d *datadriven.TestData) string {
		out := s.run(t, d)
		t.Logf("%s %s\n%s", d.Pos, d.FullCmd(), out)
		want := strings.TrimSpace(d.Expected)
		switch {
		case want == "?":
		case strings.HasPrefix(want, "!"):
			if strings.Contains(out, strings.TrimSpace(want[1:])) {
				failed = append(failed, d.Pos+": "+d.FullCmd()+": found "+want[1:]+" in:\n"+out)
			}
		case !strings.Contains(out, want):
			failed = append(failed, d.Pos+": "+d.FullCmd()+": want "+want+" in:\n"+out)
		}
		return d.Expected
	})
	for _, f := range failed {
		t.Error(f)
	}
}

// A cohort's node granted while another member waits asks, under
// YieldToOthers, the listing with a watch that tells whether another
// client waits (AskWatch), queued behind the first member's Hand. When
// the watchdog refuses that Hand, the node goes back: the listing asked
// for it tells nothing any more, and must not be sent.
func TestCohortRefusedFirstHandSendsNoCohortWatch(t *testing.T) {
	runRefusedHandScript(t, `
connect session=1
----
?

trust
----
?

acquire a cohort
----
?

acquire b cohort
----
?

created A seq=1
----
?

listed children=(A) pzxid=7
----
! cohort-watch
`)
}

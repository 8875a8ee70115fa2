package core

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// Interaction scripts of lock cohorting that need a watchdog refusing a
// grant it vouched for a moment before (a lapse between Vouches and Admit,
// as the real watchdog can have from its own timer goroutine), and
// lingering on: the core as in coreScript, with Cohort.Linger set and one
// more command,
//
//	refuse on|off   Admit refuses every grant, Vouches still vouches
//	lingering       (no event) Core.Lingering and Core.Unheld of the
//	                attempts watching /l, as the simulator's check reads them
//
// Each directive's expected output, when not "?", must appear in what the
// core decided (a line or lines of it); "!" followed by text must not.

type refusingWatchdog struct {
	*coreScriptWatchdog
	refuse bool
}

func (t *refusingWatchdog) Admit(g Grant, session int64) bool {
	return !t.refuse && t.coreScriptWatchdog.Admit(g, session)
}

func newLingerScript(linger time.Duration) (*coreScript, *refusingWatchdog) {
	var rt *refusingWatchdog
	s := newCoreScriptWith(func(cfg *Config) { cfg.Cohort.Linger = linger },
		func(t *coreScriptWatchdog) Admitter { rt = &refusingWatchdog{coreScriptWatchdog: t}; return rt })
	return s, rt
}

func runLingerScript(t *testing.T, script string) {
	s, rt := newLingerScript(50 * time.Millisecond)
	var failed []string
	datadriven.RunTestFromString(t, script, func(t *testing.T, d *datadriven.TestData) string {
		var out string
		switch d.Cmd {
		case "refuse":
			rt.refuse = d.CmdArgs[0].Key == "on"
			out = "ok"
		case "lingering":
			out = fmt.Sprintf("lingering %v\nunheld %q", s.c.Lingering("/l"), s.c.Unheld(s.c.CohortWatching("/l")))
			for _, id := range slices.Sorted(maps.Keys(s.c.coh.carriers)) {
				if h := s.c.coh.carriers[id].holder; h != 0 {
					_, holds := s.c.coh.held[h]
					out += fmt.Sprintf("\ncarrier %s: holder %s (holding: %v)", s.who[id], s.who[h], holds)
				}
			}
		default:
			out = s.run(t, d)
		}
		t.Logf("%s %s\n%s", d.Pos, d.FullCmd(), out)
		want := strings.TrimSpace(d.Expected)
		switch {
		case want == "?":
		case strings.HasPrefix(want, "!"):
			if strings.Contains(out, strings.TrimSpace(want[1:])) {
				failed = append(failed, fmt.Sprintf("%s: %s: found %q in:\n%s", d.Pos, d.FullCmd(), want[1:], out))
			}
		case !strings.Contains(out, want):
			failed = append(failed, fmt.Sprintf("%s: %s: want %q in:\n%s", d.Pos, d.FullCmd(), want, out))
		}
		return d.Expected
	})
	for _, f := range failed {
		t.Error(f)
	}
}

package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// histBuilder writes a history by hand: each critical section of a lease,
// at the times given (milliseconds).
type histBuilder struct{ evs []nemEvent }

func (b *histBuilder) ev(client, lease int, kind string, ms int64, f func(*nemEvent)) {
	e := nemEvent{Client: client, Inc: 1, Lease: lease, Kind: kind, T: ms * 1e6}
	if f != nil {
		f(&e)
	}
	b.evs = append(b.evs, e)
}

// section is a whole critical section from t: acquire, grant, read v,
// fence (accepted as seq, or refused when seq is 0), write v+1 with
// outcome out, release.
func (b *histBuilder) section(client, lease int, token int64, t, v, seq int64, out string) {
	b.ev(client, 0, evAcquire, t, nil)
	b.ev(client, lease, evGrant, t+1, func(e *nemEvent) { e.Token = token })
	b.ev(client, lease, evReadInv, t+2, nil)
	b.ev(client, lease, evReadDone, t+3, func(e *nemEvent) { e.V, e.Out = v, outOK })
	b.ev(client, lease, evFenceInv, t+4, func(e *nemEvent) { e.Token = token })
	b.ev(client, lease, evFenceDone, t+5, func(e *nemEvent) {
		e.Token, e.Seq, e.Out = token, seq, outOK
		if seq == 0 {
			e.Out = outFail
		}
	})
	b.ev(client, lease, evWriteInv, t+6, func(e *nemEvent) { e.V = v + 1 })
	b.ev(client, lease, evWriteDone, t+7, func(e *nemEvent) { e.V, e.Out = v+1, out })
	b.ev(client, lease, evReleaseInv, t+8, nil)
	b.ev(client, lease, evRelease, t+9, func(e *nemEvent) { e.Out = outOK })
}

func TestNemesisCheckCleanHistory(t *testing.T) {
	var b histBuilder
	b.section(0, 1, 10, 0, 0, 1, outOK)
	b.section(1, 1, 20, 20, 1, 2, outOK)
	b.section(0, 2, 30, 40, 2, 3, outUnknown)
	b.section(1, 2, 40, 60, 3, 4, outOK)
	r := checkNemesis(b.evs, nil, []int64{4}, 100*1e6, fenceFromEvents(b.evs))
	if v := r.Violations(1); v != 0 || r.Linearizable != porcupine.Ok {
		t.Fatalf("a clean history: %d violations, %v: %v", v, r.Linearizable, r.Examples)
	}
	if r.Leases != 4 || r.Operations != 20 {
		t.Fatalf("%d leases, %d operations; want 4 and 20", r.Leases, r.Operations)
	}
}

// A holder stopped past its session that writes when it goes on, without
// guard or fence, as the control's clients do: its write lands under the
// next holder's, the fence accepts its older token, and the register
// loses a write.
func TestNemesisCheckSeesAStaleHolder(t *testing.T) {
	var b histBuilder
	// Client 0 holds from 0, reads 0, is stopped at 4 and goes on at 50;
	// its Lost() is seen at 51.
	b.ev(0, 0, evAcquire, 0, nil)
	b.ev(0, 1, evGrant, 1, func(e *nemEvent) { e.Token = 10 })
	b.ev(0, 1, evReadInv, 2, nil)
	b.ev(0, 1, evReadDone, 3, func(e *nemEvent) { e.Out = outOK })
	// Client 1 is granted at 31, writes 1.
	b.section(1, 1, 20, 30, 0, 1, outOK)
	b.ev(0, 1, evFenceInv, 50, nil)
	b.ev(0, 1, evFenceDone, 51, func(e *nemEvent) { e.Token, e.Seq, e.Out = 10, 2, outOK })
	b.ev(0, 1, evLost, 51, nil)
	b.ev(0, 1, evWriteInv, 52, func(e *nemEvent) { e.V = 1 })
	b.ev(0, 1, evWriteDone, 53, func(e *nemEvent) { e.V, e.Out = 1, outOK })
	windows := []nemWindow{{client: 0, inc: 1, from: 4 * 1e6, to: 50 * 1e6}}
	r := checkNemesis(b.evs, windows, []int64{1}, 100*1e6, fenceFromEvents(b.evs))
	if r.FenceOrder != 1 || r.LostWrites != 1 || r.Linearizable != porcupine.Illegal {
		t.Fatalf("fence order %d, lost writes %d, %v; want 1, 1, Illegal: %v", r.FenceOrder, r.LostWrites, r.Linearizable, r.Examples)
	}
	if r.Overlaps != 0 || r.Excused != 1 {
		t.Fatalf("overlaps %d, excused %d: the stopped holder's lease is excused from the Lost() check", r.Overlaps, r.Excused)
	}

	// The same without the stop: client 0 was running and had not seen
	// Lost() when client 1 was granted.
	r = checkNemesis(b.evs, nil, []int64{1}, 100*1e6, fenceFromEvents(b.evs))
	if r.Overlaps != 1 {
		t.Fatalf("overlaps %d, want 1: %v", r.Overlaps, r.Examples)
	}
}

// Tokens must grow with the order of grants; and a read that misses an
// acknowledged write is not linearizable.
func TestNemesisCheckTokensAndStaleReads(t *testing.T) {
	var b histBuilder
	b.section(0, 1, 20, 0, 0, 1, outOK)
	b.section(1, 1, 10, 20, 0, 0, outFail) // a smaller token, and it read 0 after 1 was written
	r := checkNemesis(b.evs, nil, []int64{1}, 100*1e6, fenceFromEvents(b.evs))
	if r.TokenOrder != 1 || r.Linearizable != porcupine.Illegal {
		t.Fatalf("token order %d, %v; want 1, Illegal: %v", r.TokenOrder, r.Linearizable, r.Examples)
	}
	// A final value below an acknowledged write: the write was lost.
	var c histBuilder
	c.section(0, 1, 10, 0, 0, 1, outOK)
	r = checkNemesis(c.evs, nil, []int64{0}, 100*1e6, fenceFromEvents(c.evs))
	if r.LostWrites != 1 || r.Linearizable != porcupine.Illegal {
		t.Fatalf("lost writes %d, %v; want 1, Illegal", r.LostWrites, r.Linearizable)
	}
}

// A holder cut off sees Lost() at 100 ms, the next holder is granted at
// 350 ms: no overlap, and the margin is 250 ms.
func TestNemesisCheckLostMargin(t *testing.T) {
	var b histBuilder
	b.ev(0, 0, evAcquire, 0, nil)
	b.ev(0, 1, evGrant, 1, func(e *nemEvent) { e.Token = 10 })
	b.ev(0, 1, evLost, 100, nil)
	b.ev(0, 1, evReleaseInv, 101, nil)
	b.section(1, 1, 20, 349, 0, 1, outOK)
	r := checkNemesis(b.evs, nil, []int64{1}, 1000*1e6, fenceFromEvents(b.evs))
	if r.Overlaps != 0 || r.Lost != 1 || r.LostMargin != 250*time.Millisecond {
		t.Fatalf("overlaps %d, lost %d, margin %v; want 0, 1, 250ms: %v", r.Overlaps, r.Lost, r.LostMargin, r.Examples)
	}
}

// fenceFromEvents is the fence's log as the clients' acknowledged fenced
// writes tell it: what the fence process would have logged for them.
func fenceFromEvents(evs []nemEvent) []fenceRecord {
	var out []fenceRecord
	for _, ev := range evs {
		if ev.Kind == evFenceDone && ev.Out == outOK {
			out = append(out, fenceRecord{Path: ev.Path, Seq: ev.Seq, Token: ev.Token, Judged: true,
				Who: fmt.Sprintf("c%d.%d", ev.Client, ev.Inc)})
		}
	}
	return out
}

// cli is a lease taken through turnstile lock by the CLI participant: its
// acquire at t (the turnstile process started), its command's hello to
// the fence at start and its end, as the fence saw it, at end (0: never
// seen), with one accepted fenced write.
func (b *histBuilder) cli(client, lease int, token int64, t, start, end, seq int64) {
	b.ev(client, lease, evAcquire, t, nil)
	b.ev(client, lease, evCmdStart, start, func(e *nemEvent) { e.Token = token })
	b.ev(client, lease, evFenceInv, start+1, func(e *nemEvent) { e.Token = token })
	b.ev(client, lease, evFenceDone, start+2, func(e *nemEvent) { e.Token, e.Seq, e.Out = token, seq, outOK })
	if end != 0 {
		b.ev(client, lease, evCmdEnd, end, nil)
	}
}

// A CLI participant's command alive when another holder is granted the
// lock is a violation, unless the CLI was stopped while it held (the
// tool does not promise to see its loss then); a CLI killed is no excuse,
// since its supervisor kills the command at once.
func TestNemesisCheckCLICommandAliveBesideAGrant(t *testing.T) {
	// Client 4 (the CLI) holds from 0; its turnstile process reports the
	// loss at 40 and its command ends at 45; client 0 is granted at 101.
	var clean histBuilder
	clean.cli(4, 1, 10, 0, 5, 45, 1)
	clean.ev(4, 1, evCLILost, 40, nil)
	clean.ev(4, 1, evCLIExit, 50, func(e *nemEvent) { e.V = 1 })
	clean.section(0, 1, 20, 100, 0, 2, outOK)
	r := checkNemesis(clean.evs, nil, []int64{1}, 1000*1e6, fenceFromEvents(clean.evs))
	if v := r.Violations(1); v != 0 || r.CLILeases != 1 || r.Leases != 2 || r.CLILost != 1 {
		t.Fatalf("a command gone before the next grant: %d violations, %d CLI leases of %d, %d lost; want 0, 1 of 2, 1: %v",
			v, r.CLILeases, r.Leases, r.CLILost, r.Examples)
	}
	if r.CmdAfterLost != 5*time.Millisecond || r.CmdMargin != 56*time.Millisecond {
		t.Fatalf("the command lived %v after the loss, %v before the next grant; want 5ms and 56ms", r.CmdAfterLost, r.CmdMargin)
	}

	// The control's writer, which escaped the CLI's tree: it lives to 300,
	// beside client 0's grant at 101.
	var b histBuilder
	b.cli(4, 1, 10, 0, 5, 300, 1)
	b.ev(4, 1, evCLILost, 40, nil)
	b.section(0, 1, 20, 100, 0, 2, outOK)
	r = checkNemesis(b.evs, nil, []int64{1}, 1000*1e6, fenceFromEvents(b.evs))
	if r.CmdOverlaps != 1 || r.Overlaps != 0 || r.Violations(1) != 1 {
		t.Fatalf("a command alive beside a grant: command overlaps %d, overlaps %d, violations %d; want 1, 0, 1: %v",
			r.CmdOverlaps, r.Overlaps, r.Violations(1), r.Examples)
	}

	// Its CLI stopped from 10 to 200: excused.
	stopped := []nemWindow{{client: 4, inc: 1, from: 10 * 1e6, to: 200 * 1e6}}
	r = checkNemesis(b.evs, stopped, []int64{1}, 1000*1e6, fenceFromEvents(b.evs))
	if r.CmdOverlaps != 0 || r.Excused != 1 {
		t.Fatalf("the CLI stopped while it held: command overlaps %d, excused %d; want 0, 1", r.CmdOverlaps, r.Excused)
	}
	// Its CLI killed at 10: no excuse.
	killed := []nemWindow{{client: 4, inc: 1, from: 10 * 1e6, killed: true}}
	r = checkNemesis(b.evs, killed, []int64{1}, 1000*1e6, fenceFromEvents(b.evs))
	if r.CmdOverlaps != 1 || r.Excused != 0 || r.CmdAfterKill != 290*time.Millisecond {
		t.Fatalf("the CLI killed while it held: command overlaps %d, excused %d, the command lived %v after; want 1, 0, 290ms",
			r.CmdOverlaps, r.Excused, r.CmdAfterKill)
	}

	// A command whose end the fence never saw is alive to the run's end:
	// a later grant overlaps it.
	var open histBuilder
	open.cli(4, 1, 10, 0, 5, 0, 1)
	open.section(0, 1, 20, 500, 0, 2, outOK)
	r = checkNemesis(open.evs, nil, []int64{1}, 1000*1e6, fenceFromEvents(open.evs))
	if r.CmdOverlaps != 1 {
		t.Fatalf("a command never seen to end: command overlaps %d, want 1: %v", r.CmdOverlaps, r.Examples)
	}

	// The other way: the CLI's command starts while a client's lease,
	// granted earlier, has not seen Lost().
	var late histBuilder
	late.ev(0, 0, evAcquire, 0, nil)
	late.ev(0, 1, evGrant, 1, func(e *nemEvent) { e.Token = 10 })
	late.cli(4, 1, 20, 2, 50, 60, 1)
	late.ev(0, 1, evLost, 100, nil)
	r = checkNemesis(late.evs, nil, []int64{0}, 1000*1e6, fenceFromEvents(late.evs))
	if r.Overlaps != 1 || r.CmdOverlaps != 0 {
		t.Fatalf("the CLI's command started beside a holder: overlaps %d, command overlaps %d; want 1, 0: %v", r.Overlaps, r.CmdOverlaps, r.Examples)
	}
}

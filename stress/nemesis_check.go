package main

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// The nemesis run's checker. From the clients' events, the nemesis's
// windows (clients stopped or killed), each register's value read at the
// end and the fence process's log of accepted writes, it judges:
//
//   - exclusion: no lease granted while another lease of the path, granted
//     earlier, had seen neither its Lost() nor its release (the promise of
//     Lost(), held to the wall clock that all processes share). A holder
//     stopped or killed while it held cannot see its Lost() in time; its
//     lease is left out of this check (counted as excused), and the guard
//     and the fence must stop it instead.
//   - the CLI's command: a lease taken through turnstile lock (the CLI
//     participant, nemesis_cli.go) runs from its command's writer's hello
//     to the fence until the fence saw that process end; no other lease of
//     the path may be granted while it lives (the CLI kills its command's
//     tree on Lost() within the margin, and at once when the CLI itself
//     dies). A CLI stopped while it held cannot see its Lost(), and its
//     command runs on (the tool does not promise otherwise): that lease is
//     excused, and the fence must refuse the command's late writes. A CLI
//     killed is not: its supervisor's promise is to kill the command at
//     once.
//   - tokens: a lease granted before another was asked for has the smaller
//     token.
//   - fence: the fence process accepted tokens in non-decreasing order, by
//     its own log (with the fence off, a stale holder's late write shows
//     here).
//   - lost writes: no two acknowledged register writes wrote the same value
//     (each holder writes the value it read plus one), and the final value
//     is at least every acknowledged one.
//   - linearizability of each register with porcupine, where a critical
//     section whose write was acknowledged is one read-modify-write, a
//     refused write leaves a read, and a write of unknown outcome may take
//     effect at any time after its call.

// nemCheck is what the checker found.
type nemCheck struct {
	Operations    int
	Leases        int
	Lost          int // leases whose Lost() was seen closed
	Excused       int // leases left out of the exclusion check
	Refused       int // register writes refused (the guard, in the guarded run)
	ServerRefused int // of which by ZooKeeper's check of the lease's node
	// LostMargin is the least time from a Lost() seen (by a holder not
	// stopped or killed, before its release) to the next grant of the
	// path to another lease; -1 when no such loss was followed by a grant.
	LostMargin  time.Duration
	Fenced      int // fenced writes refused for an old token
	FenceErrors int // fenced writes that failed (the register unreadable): the fence checks are then incomplete
	Overlaps    int
	// CmdOverlaps: leases granted while a CLI lease's command, granted
	// earlier, was still alive.
	CmdOverlaps int
	// CLI: the CLI participant's leases (counted in Leases too), the
	// losses its turnstile processes reported, the most time a command
	// lived on after its CLI reported the loss (-1: no loss while a
	// command ran), and the least time from a command's end to the next
	// grant of the path to another lease (-1: none followed).
	CLILeases, CLILost int
	CmdAfterLost       time.Duration
	// CmdAfterKill: the most time a command lived on after its CLI was
	// killed (-1: no CLI killed while its command ran).
	CmdAfterKill time.Duration
	CmdMargin    time.Duration
	TokenOrder   int
	FenceOrder   int
	LostWrites   int
	Linearizable porcupine.CheckResult
	Examples     []string // the first violations, described
}

// Violations is the sum of every violation found, counting each register
// that is not linearizable as one.
func (r *nemCheck) Violations(paths int) int {
	v := r.Overlaps + r.CmdOverlaps + r.TokenOrder + r.FenceOrder + r.LostWrites
	if r.Linearizable != porcupine.Ok {
		v += paths
	}
	return v
}

func (r *nemCheck) note(format string, args ...any) {
	if len(r.Examples) < 10 {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

// nemLease is one grant, as its client saw it.
type nemLease struct {
	client, inc, n, path int
	token                int64
	acquired             int64 // the Lock call's start
	granted              int64 // its return
	end                  int64 // the earlier of Lost() seen and the release's start; 0: never seen
	lostFirst            bool  // end is the Lost() seen, before any release
	excused              bool
	// cli: taken through turnstile lock; granted is its command's hello
	// to the fence and end the command's end as the fence saw it.
	cli  bool
	lost int64 // a CLI's report of the loss; 0: none

	rounds []*nemRound // the critical section's rounds
}

// nemRound is one read and write of the register within a lease.
type nemRound struct {
	read, readDone   int64
	value            int64
	readOK           bool
	write, writeDone int64
	writeOut         string // "" when no outcome was printed
}

func (l *nemLease) round() *nemRound {
	if len(l.rounds) == 0 {
		l.rounds = append(l.rounds, &nemRound{})
	}
	return l.rounds[len(l.rounds)-1]
}

type leaseKey struct{ client, inc, n int }

// checkNemesis judges a run's history. finals[i] is register i's value
// read at the end, at time end; fence is the fence's log.
func checkNemesis(events []nemEvent, windows []nemWindow, finals []int64, end int64, fence []fenceRecord) *nemCheck {
	r := &nemCheck{LostMargin: -1, CmdAfterLost: -1, CmdAfterKill: -1, CmdMargin: -1}
	leases := map[leaseKey]*nemLease{}
	lastAcquire := map[[2]int]int64{}
	acquiredBy := map[leaseKey]int64{} // the CLI participant's acquire, which names its lease
	cliLost := map[leaseKey]int64{}
	var order []*nemLease
	for _, ev := range events {
		switch ev.Kind {
		case evAcquire, evReadInv, evWriteInv, evFenceInv, evReleaseInv:
			r.Operations++
		}
		switch {
		case ev.Kind == evLost:
			r.Lost++
		case ev.Kind == evWriteDone && ev.Out == outFail:
			r.Refused++
			if ev.Server {
				r.ServerRefused++
			}
		case ev.Kind == evFenceDone && ev.Out == outFail:
			r.Fenced++
		case ev.Kind == evFenceDone && ev.Out == outUnknown:
			r.FenceErrors++
		case ev.Kind == evCLILost:
			r.CLILost++
		}
		k := leaseKey{ev.Client, ev.Inc, ev.Lease}
		if ev.Kind == evAcquire {
			lastAcquire[[2]int{ev.Client, ev.Inc}] = ev.T
			if ev.Lease != 0 {
				acquiredBy[k] = ev.T
			}
			continue
		}
		if ev.Lease == 0 {
			continue
		}
		if ev.Kind == evCLILost {
			// Possibly before the command's hello: kept apart.
			if t, seen := cliLost[k]; !seen || ev.T < t {
				cliLost[k] = ev.T
			}
			continue
		}
		l := leases[k]
		if l == nil {
			switch ev.Kind {
			case evGrant:
				l = &nemLease{client: ev.Client, inc: ev.Inc, n: ev.Lease, path: ev.Path, token: ev.Token,
					acquired: lastAcquire[[2]int{ev.Client, ev.Inc}], granted: ev.T}
			case evCmdStart:
				l = &nemLease{client: ev.Client, inc: ev.Inc, n: ev.Lease, path: ev.Path, token: ev.Token,
					acquired: acquiredBy[k], granted: ev.T, cli: true}
				r.CLILeases++
			default:
				continue
			}
			leases[k] = l
			order = append(order, l)
			continue
		}
		if l.cli {
			if ev.Kind == evCmdEnd {
				l.end = ev.T
			}
			continue
		}
		switch ev.Kind {
		case evLost, evReleaseInv:
			if l.end == 0 || ev.T < l.end {
				l.end, l.lostFirst = ev.T, ev.Kind == evLost
			}
		case evReadInv:
			l.rounds = append(l.rounds, &nemRound{read: ev.T})
		case evReadDone:
			rd := l.round()
			rd.readDone, rd.value, rd.readOK = ev.T, ev.V, ev.Out == outOK
		case evWriteInv:
			l.round().write = ev.T
		case evWriteDone:
			rd := l.round()
			rd.writeDone, rd.writeOut = ev.T, ev.Out
		}
	}
	r.Leases = len(order)
	for _, l := range order {
		if l.cli {
			l.lost = cliLost[leaseKey{l.client, l.inc, l.n}]
		}
		for _, w := range windows {
			if w.client != l.client || w.inc != l.inc {
				continue
			}
			if l.cli && w.killed {
				// The CLI killed: its supervisor kills the command at
				// once, well within the session the server still keeps.
				if w.from >= l.granted && (l.end == 0 || w.from < l.end) {
					r.CmdAfterKill = max(r.CmdAfterKill, time.Duration(endOr(l.end, end)-w.from))
				}
				continue
			}
			// Stopped, or killed, while it held.
			if (w.killed && (l.end == 0 || w.from < l.end)) ||
				(!w.killed && w.from < endOr(l.end, end) && w.to > l.granted) {
				l.excused = true
			}
		}
		if l.end == 0 && !l.excused {
			// Neither lost nor released by the run's end: it held to the
			// end, when its process was told to stop.
			l.end = end
		}
		if l.excused {
			r.Excused++
		}
		if l.cli && !l.excused && l.lost != 0 && l.end > l.lost {
			r.CmdAfterLost = max(r.CmdAfterLost, time.Duration(l.end-l.lost))
		}
	}
	paths := len(finals)
	byPath := make([][]*nemLease, paths)
	for _, l := range order {
		if l.path >= 0 && l.path < paths {
			byPath[l.path] = append(byPath[l.path], l)
		}
	}
	for p, ls := range byPath {
		r.checkExclusion(p, ls)
		r.checkTokens(p, ls)
		r.checkLostWrites(p, ls, finals[p])
	}
	r.checkFence(fence)
	r.Linearizable = checkRegisters(order, finals, end)
	if r.Linearizable != porcupine.Ok {
		r.note("the registers' history is not linearizable (porcupine: %s)", r.Linearizable)
	}
	return r
}

func endOr(t, def int64) int64 {
	if t == 0 {
		return def
	}
	return t
}

func (r *nemCheck) checkExclusion(path int, ls []*nemLease) {
	sorted := append([]*nemLease(nil), ls...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].granted < sorted[j].granted })
	for i, a := range sorted {
		if a.excused {
			continue
		}
		if a.cli {
			for _, b := range sorted[i+1:] {
				if b.granted >= a.end && (b.client != a.client || b.inc != a.inc) {
					if d := time.Duration(b.granted - a.end); r.CmdMargin < 0 || d < r.CmdMargin {
						r.CmdMargin = d
					}
					break
				}
			}
			for _, b := range sorted[i+1:] {
				if b.granted >= a.end {
					break
				}
				r.CmdOverlaps++
				r.note("path %d: client %d's lease (token %d) granted while the command of client %d's turnstile lock (token %d, granted %v earlier) was alive, for %v more",
					path, b.client, b.token, a.client, a.token, nanos(b.granted-a.granted), nanos(a.end-b.granted))
			}
			continue
		}
		if a.lostFirst {
			for _, b := range sorted[i+1:] {
				if b.granted >= a.end && b.client != a.client {
					if d := time.Duration(b.granted - a.end); r.LostMargin < 0 || d < r.LostMargin {
						r.LostMargin = d
					}
					break
				}
			}
		}
		for _, b := range sorted[i+1:] {
			if b.granted >= a.end {
				break
			}
			r.Overlaps++
			r.note("path %d: client %d's lease (token %d) granted while client %d's (token %d, granted %v earlier) had not seen Lost(), for %v more",
				path, b.client, b.token, a.client, a.token, nanos(b.granted-a.granted), nanos(a.end-b.granted))
		}
	}
}

// checkTokens: a lease granted before another's Lock call began must have
// the smaller token.
func (r *nemCheck) checkTokens(path int, ls []*nemLease) {
	byGrant := append([]*nemLease(nil), ls...)
	sort.Slice(byGrant, func(i, j int) bool { return byGrant[i].granted < byGrant[j].granted })
	byCall := append([]*nemLease(nil), ls...)
	sort.Slice(byCall, func(i, j int) bool { return byCall[i].acquired < byCall[j].acquired })
	var maxTok int64 = math.MinInt64
	var maxOf *nemLease
	i := 0
	for _, b := range byCall {
		for i < len(byGrant) && byGrant[i].granted < b.acquired {
			if byGrant[i].token > maxTok {
				maxTok, maxOf = byGrant[i].token, byGrant[i]
			}
			i++
		}
		if maxOf != nil && b.token <= maxTok {
			r.TokenOrder++
			r.note("path %d: client %d's token %d is not above %d, of client %d's lease granted before it asked",
				path, b.client, b.token, maxTok, maxOf.client)
		}
	}
}

// checkLostWrites: every holder writes the value it read plus one, so two
// acknowledged writes of one value mean one holder's write was lost under
// another's; and the register ends at least at every acknowledged value.
func (r *nemCheck) checkLostWrites(path int, ls []*nemLease, final int64) {
	seen := map[int64]*nemLease{}
	var maxAcked int64
	for _, l := range ls {
		for _, rd := range l.rounds {
			if !rd.readOK || rd.writeOut != outOK {
				continue
			}
			v := rd.value + 1
			if o := seen[v]; o != nil {
				r.LostWrites++
				r.note("path %d: clients %d (token %d) and %d (token %d) both wrote %d, acknowledged: one write was lost",
					path, o.client, o.token, l.client, l.token, v)
			}
			seen[v] = l
			maxAcked = max(maxAcked, v)
		}
	}
	if final < maxAcked {
		r.LostWrites++
		r.note("path %d: the register ends at %d, below the acknowledged write of %d", path, final, maxAcked)
	}
}

// checkFence: the fenced register's accepted writes, in the order it
// accepted them (its own log, not the clients' word), carry non-decreasing
// tokens (the control's writes, which the fence does not judge, carry
// their writers' tokens all the same).
func (r *nemCheck) checkFence(log []fenceRecord) {
	byPath := map[int][]fenceRecord{}
	for _, a := range log {
		byPath[a.Path] = append(byPath[a.Path], a)
	}
	for p, as := range byPath {
		sort.Slice(as, func(i, j int) bool { return as[i].Seq < as[j].Seq })
		var maxTok int64 = math.MinInt64
		for _, a := range as {
			if a.Token < maxTok {
				r.FenceOrder++
				r.note("path %d: the fenced register accepted %s's token %d after token %d", p, a.Who, a.Token, maxTok)
			}
			maxTok = max(maxTok, a.Token)
		}
	}
}

func nanos(d int64) time.Duration { return time.Duration(d).Round(time.Millisecond) }

// The register model: the state is the register's value.
type regOp struct {
	path int
	kind int // regRead, regRMW, regWrite
	v    int64
}

const (
	regRead  = iota // read v
	regRMW          // read v and write v+1, atomically (the critical section)
	regWrite        // write v (a write of unknown outcome)
)

var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		m := map[int][]porcupine.Operation{}
		for _, op := range h {
			p := op.Input.(regOp).path
			m[p] = append(m[p], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range m {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, _ any) (bool, any) {
		s, in := state.(int64), input.(regOp)
		switch in.kind {
		case regRead:
			return s == in.v, s
		case regRMW:
			return s == in.v, s + 1
		}
		return true, in.v
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(regOp)
		return [...]string{"read", "rmw", "write"}[in.kind] + fmt.Sprint(" ", in.v)
	},
}

// checkRegisters runs porcupine on the registers' operations.
func checkRegisters(ls []*nemLease, finals []int64, end int64) porcupine.CheckResult {
	var ops []porcupine.Operation
	add := func(client int, in regOp, call, ret int64) {
		ops = append(ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Return: ret})
	}
	for _, l := range ls {
		for _, rd := range l.rounds {
			if !rd.readOK {
				continue
			}
			switch {
			case rd.writeOut == outOK:
				add(l.client, regOp{l.path, regRMW, rd.value}, rd.read, rd.writeDone)
			case rd.write != 0 && rd.writeOut != outFail:
				// Unknown: it may have landed at any time after its call.
				add(l.client, regOp{l.path, regRead, rd.value}, rd.read, rd.readDone)
				add(l.client, regOp{l.path, regWrite, rd.value + 1}, rd.write, math.MaxInt64)
			default:
				add(l.client, regOp{l.path, regRead, rd.value}, rd.read, rd.readDone)
			}
		}
	}
	for p, v := range finals {
		add(len(ls), regOp{p, regRead, v}, end, end)
	}
	return porcupine.CheckOperationsTimeout(registerModel, ops, 5*time.Minute)
}

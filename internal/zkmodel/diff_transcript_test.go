package zkmodel_test

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/turnstile-go/turnstile/internal/zkmodel"
)

// zxid marks a zxid inside a transcript line. The model and a real server
// count zxids from different starting points, so a transcript is compared
// with each zxid replaced by its rank among all the zxids of the run: equal
// zxids stay equal, order is kept, absolute values go. Since every reply's
// zxid is recorded, a transaction one side spends and the other does not
// (a refused write, a session's creation) shifts the ranks and shows.
type zxid int64

// line is one thing a session saw: a reply or a watch event.
type line struct {
	format string
	args   []any
}

// transcript is what each session of a run saw, in the order it saw it.
// Order across sessions means nothing (each has its own connection), so
// each session's lines are kept and compared apart.
type transcript struct {
	mu       sync.Mutex // a real client's event callback appends from its own goroutine
	sessions [][]line
}

func (tr *transcript) add(k int, format string, args ...any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for len(tr.sessions) <= k {
		tr.sessions = append(tr.sessions, nil)
	}
	tr.sessions[k] = append(tr.sessions[k], line{format, args})
}

func (tr *transcript) len(k int) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if k >= len(tr.sessions) {
		return 0
	}
	return len(tr.sessions[k])
}

// sortFrom sorts session k's lines from index from on: the events that
// answer a reconnect's setWatches, which go-zookeeper lists from a map.
func (tr *transcript) sortFrom(k, from int) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if k < len(tr.sessions) {
		slices.SortStableFunc(tr.sessions[k][from:], func(a, b line) int {
			return cmp.Compare(fmt.Sprint(a.args...), fmt.Sprint(b.args...))
		})
	}
}

// render returns each session's lines with zxids replaced by their ranks.
func (tr *transcript) render() [][]string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var all []zxid
	for _, lines := range tr.sessions {
		for _, l := range lines {
			for _, a := range l.args {
				if z, ok := a.(zxid); ok {
					all = append(all, z)
				}
			}
		}
	}
	slices.Sort(all)
	all = slices.Compact(all)
	out := make([][]string, len(tr.sessions))
	for k, lines := range tr.sessions {
		for _, l := range lines {
			args := slices.Clone(l.args)
			for i, a := range args {
				if z, ok := a.(zxid); ok {
					rank, _ := slices.BinarySearch(all, z)
					args[i] = fmt.Sprintf("z%d", rank)
				}
			}
			out[k] = append(out[k], fmt.Sprintf(l.format, args...))
		}
	}
	return out
}

// diffTranscripts describes the first difference of each session, with
// the lines before it, or returns "".
func diffTranscripts(model, real *transcript) string {
	a, b := model.render(), real.render()
	var sb strings.Builder
	for k := range max(len(a), len(b)) {
		var ma, rb []string
		if k < len(a) {
			ma = a[k]
		}
		if k < len(b) {
			rb = b[k]
		}
		i := 0
		for i < len(ma) && i < len(rb) && ma[i] == rb[i] {
			i++
		}
		if i == len(ma) && i == len(rb) {
			continue
		}
		fmt.Fprintf(&sb, "session s%d, line %d:\n", k, i)
		for _, l := range ma[max(0, i-4):i] {
			fmt.Fprintf(&sb, "   both: %s\n", l)
		}
		for _, side := range []struct {
			name  string
			lines []string
		}{{"model", ma}, {"zk", rb}} {
			for _, l := range side.lines[i:min(len(side.lines), i+3)] {
				fmt.Fprintf(&sb, "  %5s: %s\n", side.name, l)
			}
			if i >= len(side.lines) {
				fmt.Fprintf(&sb, "  %5s: (nothing)\n", side.name)
			}
		}
	}
	return sb.String()
}

// owners names a stat's ephemeralOwner the same way on both sides: the
// session's index in the run.
type owners map[int64]int

func (o owners) name(owner int64) string {
	switch owner {
	case 0:
		return "-"
	}
	if k, ok := o[owner]; ok {
		return fmt.Sprintf("s%d", k)
	}
	return fmt.Sprintf("unknown(%#x)", owner)
}

// addReply records session k's reply to req in the vocabulary both sides
// share: the fields the client API returns for that request.
func (tr *transcript) addReply(k int, o owners, req zkmodel.Request, rep zkmodel.Reply) {
	format := "%v %s -> %v @%v"
	args := []any{req.Op, req.Path, rep.Err, zxid(rep.Zxid)}
	stat := func(st zkmodel.Stat) {
		format += " {czxid %v mzxid %v pzxid %v version %d cversion %d owner %s len %d children %d}"
		args = append(args, zxid(st.Czxid), zxid(st.Mzxid), zxid(st.Pzxid), st.Version, st.Cversion,
			o.name(st.EphemeralOwner), st.DataLength, st.NumChildren)
	}
	switch req.Op {
	case zkmodel.OpCreate, zkmodel.OpCreateContainer, zkmodel.OpSync:
		format += " %q"
		args = append(args, rep.Path)
	case zkmodel.OpGetData:
		if rep.Err == zkmodel.OK {
			format += " data %q"
			args = append(args, rep.Data)
		}
	case zkmodel.OpGetChildren:
		if rep.Err == zkmodel.OK {
			format += " %q"
			args = append(args, rep.Children)
		}
	case zkmodel.OpMulti:
		for i, r := range rep.Results {
			format += " [%v %v %q"
			args = append(args, req.Ops[i].Op, r.Err, r.Path)
			if r.Op == zkmodel.OpSetData && rep.Err == zkmodel.OK {
				stat(r.Stat)
			}
			format += "]"
		}
	}
	switch req.Op {
	case zkmodel.OpSetData, zkmodel.OpExists, zkmodel.OpGetData, zkmodel.OpGetChildren:
		if rep.Err == zkmodel.OK {
			stat(rep.Stat)
		}
	}
	tr.add(k, format, args...)
}

func (tr *transcript) addEvent(k int, ev zkmodel.Event) {
	tr.add(k, "event %v %s", ev.Type, ev.Path)
}

func (tr *transcript) addConnected(k int, timeoutMs int64) {
	tr.add(k, "connected, negotiated timeout %dms", timeoutMs)
}

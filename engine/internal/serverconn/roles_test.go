package serverconn

import (
	"slices"
	"testing"
)

// The client waits a second before dialing again when its host list says
// every server was tried since the last connection, as go-zookeeper's own
// list does: never before the first dial; with one server, before every
// reconnection. After the engine
// closed a connection itself (from a silent server), the next dial must
// come at once, even with one server.
func TestHostListWaitsOnlyAfterAFullRound(t *testing.T) {
	for _, n := range []int{1, 3} {
		h := &hostList{}
		servers := []string{"a:1", "b:2", "c:3"}[:n]
		if err := h.Init(servers); err != nil || h.Len() != n {
			t.Fatalf("%d servers: Init %v, Len %d", n, err, h.Len())
		}
		var waits []bool
		seen := map[string]bool{}
		for range 2*n + 1 {
			s, wait := h.Next()
			seen[s] = true
			waits = append(waits, wait)
		}
		want := make([]bool, 2*n+1)
		want[n], want[2*n] = true, true
		if !slices.Equal(waits, want) {
			t.Fatalf("%d servers, every dial failing: waits %v, want %v", n, waits, want)
		}
		if len(seen) != n {
			t.Fatalf("%d servers: dialed %v", n, seen)
		}
		h.Connected()
		h.redialAtOnce()
		if _, wait := h.Next(); wait {
			t.Fatalf("%d servers: waits before the dial after the engine closed a connection", n)
		}
		h.Connected()
		if _, wait := h.Next(); wait != (n == 1) {
			t.Fatalf("%d servers: waits %v before the dial after a connection the engine did not close", n, wait)
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, c := range []struct {
		answer string
		want   serverMode
	}{
		{"Zookeeper version: 3.8.0\nLatency min/avg/max: 0/0.0/0\nMode: leader\nNode count: 5\n", modeLeader},
		{"Mode: standalone\n", modeLeader},
		{"Mode: follower\n", modeFollower},
		{"Mode: observer\n", modeFollower},
		{"This ZooKeeper instance is not currently serving requests\n", modeUnknown},
		{"srvr is not executed because it is not in the whitelist.\n", modeUnknown},
		{"Mode: read-only\n", modeUnknown},
		{"", modeUnknown},
	} {
		if got := parseMode([]byte(c.answer)); got != c.want {
			t.Errorf("parseMode(%q) = %v, want %v", c.answer, got, c.want)
		}
	}
}

// The engines of one process take the servers first in turn: any twelve
// in a row start four on each of three servers.
func TestHostListsTakeTheFirstServerInTurn(t *testing.T) {
	first := map[string]int{}
	for range 12 {
		h := &hostList{}
		if err := h.Init([]string{"c:3", "a:1", "b:2"}); err != nil {
			t.Fatal(err)
		}
		s, _ := h.Next()
		first[s]++
		if seen := slices.Sorted(slices.Values(h.servers)); !slices.Equal(seen, []string{"a:1", "b:2", "c:3"}) {
			t.Fatalf("servers %v", h.servers)
		}
	}
	for _, s := range []string{"a:1", "b:2", "c:3"} {
		if first[s] != 4 {
			t.Fatalf("first servers %v, want four each", first)
		}
	}
}

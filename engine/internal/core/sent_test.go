package core

import (
	"testing"

	"github.com/turnstile-go/turnstile/engine/internal/input"
	"github.com/turnstile-go/turnstile/internal/nodename"
)

// A release whose delete the runtime sent is counted in flight even when
// the core refuses it (the lease was lost between the runtime's choice
// and this step: an expiry, Close), until the delete's reply and its
// request's end come back: else the bound on requests in flight, and the
// count of changes in flight on the path that orders listings, would be
// off by one for good.
func TestSentReleaseRefusedIsCountedUntilItsReply(t *testing.T) {
	c := New(Config{MaxInFlight: 1, NewID: nodename.NewID}, nil)
	const node = "/l/_c_x-lock-0000000001"
	c.Step(input.Command{Payload: &Release{ID: 7, Sent: true, Node: node}})
	rd := c.Ready()
	if len(rd.Notices) != 1 || rd.Notices[0].Kind != NoteReleaseRefused || len(rd.Requests) != 0 {
		t.Fatalf("a release of no lease: %+v, want it refused and nothing sent", rd)
	}
	if g := c.commit; g.inFlight != 1 || g.writing != 1 || g.writeOps != 1 || c.changing["/l"] != 1 {
		t.Fatalf("after the release: %d in flight, %d writes carrying %d, %d changes on /l; want the sent delete counted (1, 1, 1, 1)",
			g.inFlight, g.writing, g.writeOps, c.changing["/l"])
	}
	c.Step(input.OpDone{Op: input.OpDelete, Contender: 7, Path: node, Outcome: input.OK})
	c.Step(input.RequestDone{Write: true, Ops: 1})
	c.Ready()
	if g := c.commit; g.inFlight != 0 || g.writing != 0 || g.writeOps != 0 || c.changing["/l"] != 0 {
		t.Fatalf("after the reply: %d in flight, %d writes carrying %d, %d changes on /l; want none",
			g.inFlight, g.writing, g.writeOps, c.changing["/l"])
	}
}

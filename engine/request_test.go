package engine_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/queue"
)

// Every request that cannot work fails at once: resolved when Acquire
// returns, with the error's sentinel, having sent nothing and made nothing.
func TestInvalidRequestsFailAtOnce(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	raw := rawConn(t)
	root := testRoot(t)
	mkdirs(t, raw, root)
	valid := engine.Request{Path: root + "/a", Kind: queue.KindMutex, Decide: firstInLine}
	for _, tc := range []struct {
		name string
		edit func(*engine.Request)
		want error
	}{
		{"empty path", func(r *engine.Request) { r.Path = "" }, engine.ErrInvalidPath},
		{"relative path", func(r *engine.Request) { r.Path = strings.TrimPrefix(r.Path, "/") }, engine.ErrInvalidPath},
		{"trailing slash", func(r *engine.Request) { r.Path += "/" }, engine.ErrInvalidPath},
		{"no decider", func(r *engine.Request) { r.Decide = nil }, engine.ErrInvalidRequest},
		{"no kind", func(r *engine.Request) { r.Kind = 0 }, engine.ErrInvalidRequest},
		{"a kind queue does not know", func(r *engine.Request) { r.Kind = queue.KindObserver + 1 }, engine.ErrInvalidRequest},
		{"a shared kind in a cohort", func(r *engine.Request) { r.Kind, r.Cohort = queue.KindRead, true }, engine.ErrInvalidRequest},
		{"seq too short", func(r *engine.Request) { r.Seq = "5" }, engine.ErrInvalidRequest},
		{"seq too long", func(r *engine.Request) { r.Seq = "00000000050" }, engine.ErrInvalidRequest},
		{"seq not digits", func(r *engine.Request) { r.Seq = "00000000x5" }, engine.ErrInvalidRequest},
		{"seq with a plus sign", func(r *engine.Request) { r.Seq = "+000000005" }, engine.ErrInvalidRequest},
		{"data over the limit", func(r *engine.Request) { r.Data = make([]byte, engine.MaxDataLen+1) }, engine.ErrInvalidRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := valid
			tc.edit(&req)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel() // ends an acquisition that did not fail at once
			before := eng.Stats()
			f := eng.Acquire(ctx, req)
			_, resolved, err := f.Result()
			if !resolved {
				cancel()
				_, err = f.Wait(context.Background())
				t.Errorf("not refused at once (it ended with %v once cancelled); %d requests sent", err,
					eng.Stats().Requests()-before.Requests())
				return
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("err %v, want %v", err, tc.want)
			}
			if after := eng.Stats(); after != before {
				t.Errorf("requests sent: stats %+v, then %+v", before, after)
			}
			if nodes := ephemerals(t, raw, root); len(nodes) > 0 {
				t.Errorf("nodes left: %v", nodes)
			}
		})
	}
}

// The limits themselves are accepted, and work on a real server: Data of
// MaxDataLen bytes in a node under a path of MaxPathLen bytes, with the
// longest marker, and a fixed sequence number.
func TestRequestAtTheLimitsIsGranted(t *testing.T) {
	eng := startEngine(t, engine.Config{})
	raw := rawConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := testRoot(t)
	path := root + "/" + strings.Repeat("p", engine.MaxPathLen-len(root)-1)
	data := bytes.Repeat([]byte("d"), engine.MaxDataLen)
	// The writer, then a read node borrowing its number (a downgrade,
	// granted only beside the node it borrows from).
	w, err := eng.Acquire(ctx, engine.Request{Path: path, Kind: queue.KindWrite, Decide: firstInLine, Data: data}).Wait(ctx)
	if err != nil {
		t.Fatalf("writer: %v", err)
	}
	seq := w.Node()[len(w.Node())-10:]
	shares := func(l *queue.Listing, self string) queue.Decision {
		return queue.Decision{Holds: l.Has(self), Missing: !l.Has(self)}
	}
	r, err := eng.Acquire(ctx, engine.Request{Path: path, Kind: queue.KindRead, Decide: shares, Data: data, Seq: seq}).Wait(ctx)
	if err != nil {
		t.Fatalf("read node with seq %s: %v", seq, err)
	}
	for _, l := range []*engine.Lease{r, w} {
		got, _, err := raw.Get(path + "/" + l.Node()[strings.LastIndexByte(l.Node(), '/')+1:])
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("node data: %d bytes, %v; want the %d written", len(got), err, len(data))
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "no lock node left", func() bool { return len(ephemerals(t, raw, root)) == 0 })
}

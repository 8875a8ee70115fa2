// Package httpfence fences the data of an HTTP service: the client puts
// its lease's lock path and token on every request (Transport), and the
// service admits or refuses each request by a fence.Verifier before its
// handler writes (Middleware).
//
// # What a token proves
//
// Nothing about who sends it: a token is a number, and a client can send
// any. A forged token below the greatest one admitted is refused like a
// stale one; a forged token above it is admitted, and then refuses the
// real holder's writes until a grant with a greater token comes (the lock
// path's next grant, after the forger's number). So a fence keeps honest
// holders that stalled from overwriting newer writes; against callers the
// service does not trust it needs more: their authentication, and, for the
// lock itself, Options.Holds, which asks ZooKeeper whether the node the
// request names (Lease.Node, in its own header) holds the lock (one read,
// fence.Holds). That keeps out a caller that never held the lock or no
// longer does, but not one that copies the current holder's node name,
// which anyone who may list the lock path can read.
//
// # An ensemble rebuilt from scratch
//
// Tokens are zxids: an ensemble whose data is wiped starts its zxids
// again from the bottom, and every token it grants is below those its old
// data granted, so every fence that saw the old tokens refuses every new
// holder. Move each fence past it by hand: stop the writers, then set the
// fence's token to 0 (for sqlfence, UPDATE turnstile_fence SET token = 0
// WHERE path = ...; a Memory fence by restarting its process) before the
// first write under the new ensemble. The stalled holders of the old
// ensemble are then the danger: stop them first. An ensemble restored
// from its snapshots and logs keeps its zxids, and needs nothing.
package httpfence

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/fence"
)

// The request headers.
const (
	HeaderPath  = "Turnstile-Lock-Path"
	HeaderToken = "Turnstile-Fencing-Token"
	HeaderNode  = "Turnstile-Lock-Node"
)

// Set puts tok (and node, if not empty) on r's headers.
func Set(r *http.Request, tok fence.Token, node string) {
	r.Header.Set(HeaderPath, tok.Path)
	r.Header.Set(HeaderToken, strconv.FormatInt(tok.Value, 10))
	if node != "" {
		r.Header.Set(HeaderNode, node)
	}
}

// Transport sends every request with Lease's lock path, token and node.
// A lease that has ended sends nothing: its request fails with the
// lease's error (engine.ErrNotHeld once released), since a fence could only refuse it, or,
// when no newer holder has written yet, admit a write its holder no
// longer has the right to.
type Transport struct {
	Lease *engine.Lease
	Base  http.RoundTripper // http.DefaultTransport if nil
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.Lease == nil {
		return nil, fmt.Errorf("%w: httpfence: Transport without a Lease", engine.ErrInvalidRequest)
	}
	if !t.Lease.Held() {
		if r.Body != nil {
			r.Body.Close()
		}
		err := t.Lease.Err() // why it was lost
		if err == nil {
			err = engine.ErrNotHeld // released
		}
		return nil, fmt.Errorf("httpfence: the lease has ended: %w", err)
	}
	r = r.Clone(r.Context()) // a RoundTripper must not change the caller's request
	Set(r, fence.TokenOf(t.Lease), t.Lease.Node())
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	return base.RoundTrip(r)
}

// Options tune Middleware.
type Options struct {
	// Holds, if set, is asked before the verifier whether the request's
	// node holds the lock (fence.Holds, on an engine of the service's);
	// a request without a node, or whose node does not hold, is refused
	// with 412.
	Holds func(r *http.Request, lockPath, node string) (bool, error)
}

// Middleware admits a request by v before next handles it, and runs next
// inside v's check, as the write of the request's token: next must write
// only the data of v's store (for sqlfence, through sqlfence.Tx of the
// request's context). Its response is held until the write is committed,
// then sent; a response of next with a status of 400 or more fails the
// write (the store records nothing: sqlfence rolls back) and is sent as
// it is.
//
// A refused request gets a text body that says why:
//   - 428 Precondition Required: no token, or one that is not a number;
//   - 409 Conflict: a stale token (the body names the token that won);
//   - 412 Precondition Failed: a token of another lock path, or (with
//     Options.Holds) a node that does not hold the lock;
//   - 500: the store failed.
func Middleware(v *fence.Verifier, next http.Handler, opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, err := strconv.ParseInt(r.Header.Get(HeaderToken), 10, 64)
		if err != nil {
			http.Error(w, "fencing token missing or not a number: send the lease's token in "+HeaderToken, http.StatusPreconditionRequired)
			return
		}
		t := fence.Token{Path: r.Header.Get(HeaderPath), Value: tok}
		if err := v.Valid(t); err != nil {
			status := http.StatusPreconditionFailed
			if errors.Is(err, engine.ErrInvalidRequest) {
				status = http.StatusPreconditionRequired
			}
			http.Error(w, err.Error(), status)
			return
		}
		if opts.Holds != nil {
			node := r.Header.Get(HeaderNode)
			held, err := opts.Holds(r, v.Path(), node)
			switch {
			case err != nil:
				http.Error(w, "fence: cannot ask whether the lock is held: "+err.Error(), http.StatusInternalServerError)
				return
			case !held:
				http.Error(w, fmt.Sprintf("fence: node %q does not hold lock %s", node, v.Path()), http.StatusPreconditionFailed)
				return
			}
		}
		var resp *held
		err = v.Do(r.Context(), t, func(ctx context.Context) error {
			resp = &held{header: http.Header{}, status: http.StatusOK}
			next.ServeHTTP(resp, r.WithContext(ctx))
			if resp.status >= 400 {
				return errHandlerFailed
			}
			return nil
		})
		switch {
		case err == nil || errors.Is(err, errHandlerFailed):
			resp.send(w)
		case errors.Is(err, fence.ErrStale):
			http.Error(w, err.Error(), http.StatusConflict)
		default:
			http.Error(w, "fence: "+err.Error(), http.StatusInternalServerError)
		}
	})
}

var errHandlerFailed = errors.New("httpfence: the handler answered an error")

// held is a response kept until its write commits.
type held struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (h *held) Header() http.Header { return h.header }

func (h *held) WriteHeader(status int) {
	if !h.wrote {
		h.status, h.wrote = status, true
	}
}

func (h *held) Write(b []byte) (int, error) {
	h.wrote = true
	return h.body.Write(b)
}

func (h *held) send(w http.ResponseWriter) {
	for k, vs := range h.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body.Bytes())
}

// HoldsOn is an Options.Holds that asks ZooKeeper on eng's session.
func HoldsOn(eng *engine.Engine) func(r *http.Request, lockPath, node string) (bool, error) {
	return func(r *http.Request, lockPath, node string) (bool, error) {
		if node == "" {
			return false, nil
		}
		return fence.Holds(r.Context(), eng, lockPath, node)
	}
}

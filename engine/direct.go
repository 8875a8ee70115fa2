package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine/internal/zkerr"
	"github.com/turnstile-go/turnstile/internal/seam"
)

// children lists path's children on the engine's session; path is under
// Config.Root, as for every method of the engine. Recipes and
// tools use it for one-off reads (who holds, who waits); acquisitions never
// do, they go through the loop.
func (e *Engine) children(ctx context.Context, path string) ([]string, error) {
	path, err := e.serverPath(path)
	if err != nil {
		return nil, err
	}
	return direct(ctx, e, func() ([]string, error) {
		children, _, err := e.conn.Children(path)
		return children, zkErr(err)
	})
}

// data reads a node's data on the engine's session.
func (e *Engine) data(ctx context.Context, path string) ([]byte, error) {
	path, err := e.serverPath(path)
	if err != nil {
		return nil, err
	}
	return direct(ctx, e, func() ([]byte, error) {
		data, _, err := e.conn.Get(path)
		return data, zkErr(err)
	})
}

// dataW reads a node's data and sets a data watch on it, in one request.
func (e *Engine) dataW(ctx context.Context, path string) ([]byte, <-chan zk.Event, error) {
	path, err := e.serverPath(path)
	if err != nil {
		return nil, nil, err
	}
	type read struct {
		data []byte
		ch   <-chan zk.Event
	}
	r, err := direct(ctx, e, func() (read, error) {
		data, _, ch, err := e.conn.GetW(path)
		return read{data, ch}, zkErr(err)
	})
	return r.data, r.ch, err
}

// setData writes a node's data on the engine's session, whatever its version.
func (e *Engine) setData(ctx context.Context, path string, data []byte) error {
	path, err := e.serverPath(path)
	if err != nil {
		return err
	}
	_, err = direct(ctx, e, func() (struct{}, error) {
		_, err := e.conn.Set(path, data, -1)
		return struct{}{}, zkErr(err)
	})
	return err
}

// ErrNoNode is returned by Children, Data and SetData for a node that does
// not exist. A read or write the node's ACL does not allow fails with an
// error wrapping ErrNoAuth.
var ErrNoNode = errors.New("turnstile: no such node")

func zkErr(err error) error {
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return ErrNoNode
	case zkerr.NoAuth(err):
		return fmt.Errorf("%w: %w", ErrNoAuth, err)
	}
	return err
}

// direct runs one synchronous request of the client, giving up with
// context.Cause(ctx) (but not abandoning the request, which the client
// bounds) when ctx ends.
func direct[T any](ctx context.Context, e *Engine, call func() (T, error)) (T, error) {
	var zero T
	if err := checkCall(e, ctx); err != nil {
		return zero, err
	}
	if ctx.Err() != nil {
		return zero, context.Cause(ctx)
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return zero, ErrClosed
	}
	e.wg.Add(1)
	e.mu.Unlock()
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer e.wg.Done()
		v, err := call()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	}
}

// The recipes' packages reach the engine's one-off reads and writes
// through internal/seam, which keeps them out of the public API.
func init() {
	seam.Children = func(eng any, ctx context.Context, path string) ([]string, error) {
		return eng.(*Engine).children(ctx, path)
	}
	seam.Data = func(eng any, ctx context.Context, path string) ([]byte, error) {
		return eng.(*Engine).data(ctx, path)
	}
	seam.DataW = func(eng any, ctx context.Context, path string) ([]byte, <-chan zk.Event, error) {
		return eng.(*Engine).dataW(ctx, path)
	}
	seam.SetData = func(eng any, ctx context.Context, path string, data []byte) error {
		return eng.(*Engine).setData(ctx, path, data)
	}
	seam.FailsOnExpiry = func(eng any) bool { return eng.(*Engine).cfg.FailOnExpiry }
}

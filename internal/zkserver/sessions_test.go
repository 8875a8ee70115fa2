package zkserver

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// A session made through Sessions.Dial is expired on demand: its ephemeral
// node is gone when Expire returns, and its client is told the session
// expired. A session the dialer never saw, or one already closed, is an
// error.
func TestSessionsExpire(t *testing.T) {
	s := StartT(t, Options{})
	ctx := ctxT(t, 2*time.Minute)
	var sessions Sessions

	var expired = make(chan struct{})
	conn, events, err := zk.Connect([]string{s.Addr()}, 10*time.Second, zk.WithDialer(sessions.Dial), zk.WithLogger(tLogger{t}),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateExpired {
				select {
				case <-expired:
				default:
					close(expired)
				}
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		conn.Close()
		for range events {
		}
	}()
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-ctx.Done():
			t.Fatal("no session")
		}
	}
	id := conn.SessionID()
	if _, ok := sessions.Password(id); !ok {
		t.Fatalf("the dialer did not see session %#x's handshake", id)
	}
	if _, err := conn.Create("/expire-me", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}

	if err := sessions.Expire(ctx, []string{s.Addr()}, id); err != nil {
		t.Fatalf("Expire: %v", err)
	}
	other := connect(t, s.Addr())
	if found, _, err := other.Exists("/expire-me"); err != nil || found {
		t.Fatalf("the expired session's ephemeral node: exists=%v err=%v", found, err)
	}
	select {
	case <-expired:
	case <-ctx.Done():
		t.Fatal("the client was never told its session expired")
	}

	if err := sessions.Expire(ctx, []string{s.Addr()}, id); err == nil {
		t.Error("a second Expire of the same session succeeded")
	}
	if err := sessions.Expire(ctx, []string{s.Addr()}, other.SessionID()); !errors.Is(err, ErrUnknownSession) {
		t.Errorf("Expire of a session not dialled through Sessions: %v, want ErrUnknownSession", err)
	}
}

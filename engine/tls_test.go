package engine_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/engine"
	"github.com/turnstile-go/turnstile/internal/zkserver"
	"github.com/turnstile-go/turnstile/internal/zktest"
	"github.com/turnstile-go/turnstile/lock"
)

// refusedConnectTimeout bounds Start where no session can come: it only
// has to let a few connection attempts fail.
const refusedConnectTimeout = 3 * time.Second

// One server serving TLS on its secure client port (and plain connections
// on its client port) for every case: a key of the server's own from the
// JDK's keytool, and a client certificate it trusts.
func TestTLS(t *testing.T) {
	srv, files := zkserver.StartTLST(t, zkserver.Options{})
	trusted, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}

	// The lock works over TLS as over a plain connection: granted, its node
	// visible to a plain session, released and gone.
	t.Run("LockAndRelease", func(t *testing.T) {
		ctx := boundedCtx(t)
		path := testRoot(t) + "/sealed"
		e := zktest.StartEngine(t, "", engine.Config{Servers: []string{srv.SecureAddr()}, TLS: trusted})
		defer e.Close()
		l, err := lock.NewMutex(e, path).Lock(ctx)
		if err != nil {
			t.Fatalf("Lock over TLS: %v", err)
		}
		plain := zktest.Connect(t, srv.Addr())
		if nodes := zktest.Ephemerals(t, plain, path); !slices.Equal(nodes, []string{l.Node()}) {
			t.Errorf("nodes under %s: %v, want the holder's %s", path, nodes, l.Node())
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release over TLS: %v", err)
		}
		if nodes := zktest.Ephemerals(t, plain, path); len(nodes) != 0 {
			t.Errorf("nodes under %s after the release: %v", path, nodes)
		}
	})

	// The client certificate is an identity of the session (x509, its
	// subject) beside the credentials of Auth: a creator-only ACL names
	// both, and a session with neither can do nothing with the lock.
	t.Run("CertificateIdentityBesideAuth", func(t *testing.T) {
		ctx := boundedCtx(t)
		path := testRoot(t) + "/creator"
		owner := zktest.StartEngine(t, "", engine.Config{Servers: []string{srv.SecureAddr()}, TLS: trusted,
			Auth: []engine.Credential{alice}, ACL: zk.AuthACL(zk.PermAll)})
		defer owner.Close()
		held, err := lock.NewMutex(owner, path).Lock(ctx)
		if err != nil {
			t.Fatalf("Lock with a creator-only ACL over TLS: %v", err)
		}
		// Reading an ACL takes a right on the node: alice's, on the plain port.
		asAlice := zktest.Connect(t, srv.Addr())
		if err := asAlice.AddAuth(alice.Scheme, alice.Secret); err != nil {
			t.Fatal(err)
		}
		acl, _, err := asAlice.GetACL(held.Node())
		if err != nil {
			t.Fatal(err)
		}
		var schemes []string
		for _, a := range acl {
			schemes = append(schemes, a.Scheme)
			if a.Scheme == "x509" && a.ID != files.ClientSubject {
				t.Errorf("x509 identity %q, want the certificate's subject %q", a.ID, files.ClientSubject)
			}
		}
		if slices.Sort(schemes); !slices.Equal(schemes, []string{"digest", "x509"}) {
			t.Errorf("ACL of the lock node %+v: want the digest and the x509 identity", acl)
		}

		stranger := zktest.StartEngine(t, srv.Addr(), engine.Config{})
		defer stranger.Close()
		if l, err := lock.NewMutex(stranger, path).TryAcquire(ctx); !errors.Is(err, engine.ErrNoAuth) {
			t.Errorf("TryAcquire without certificate or credentials: lease %v, err %v; want ErrNoAuth", l, err)
		}

		// Only the certificate, no Auth: enough for an ACL of the creator.
		certOnly := zktest.StartEngine(t, "", engine.Config{Servers: []string{srv.SecureAddr()}, TLS: trusted,
			ACL: zk.AuthACL(zk.PermAll)})
		defer certOnly.Close()
		l, err := lock.NewMutex(certOnly, testRoot(t)+"/cert-only").Lock(ctx)
		if err != nil {
			t.Fatalf("Lock with a creator-only ACL, a certificate and no Auth: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// Every mismatch of client and port, and a server certificate the
	// client does not trust, ends Start with ErrUnreachable once
	// ConnectTimeout has passed, not with the test's deadline.
	wrongCA := trusted.Clone()
	wrongCA.RootCAs = x509.NewCertPool()
	clientPEM, err := os.ReadFile(files.ClientCert)
	if err != nil {
		t.Fatal(err)
	}
	// The client's own self-signed certificate signed nothing the server has.
	wrongCA.RootCAs.AppendCertsFromPEM(clientPEM)
	anonymous := trusted.Clone()
	anonymous.Certificates = nil
	for _, tc := range []struct {
		name   string
		server string
		tls    *tls.Config
		logged string // what the warning of the failed connection says; "" for none
	}{
		{"TLSOnPlainPort", srv.Addr(), trusted, "TLS handshake"},
		{"PlainOnSecurePort", srv.SecureAddr(), nil, ""},
		{"WrongCA", srv.SecureAddr(), wrongCA, "x509: certificate signed by unknown authority"},
		// The server needs a client certificate (ssl.clientAuth=need), and
		// says so within the handshake: ZooKeeper 3.8 speaks TLS 1.2.
		{"NoClientCertificate", srv.SecureAddr(), anonymous, "tls: bad certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs lockedBuffer
			ctx := boundedCtx(t)
			e, err := engine.Start(ctx, engine.Config{
				Servers:        []string{tc.server},
				TLS:            tc.tls,
				ConnectTimeout: refusedConnectTimeout,
				Logger:         slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			if err == nil {
				e.Close()
				t.Fatal("Start succeeded")
			}
			if !errors.Is(err, engine.ErrUnreachable) || ctx.Err() != nil {
				t.Errorf("Start: %v (test context: %v); want ErrUnreachable within ConnectTimeout", err, ctx.Err())
			}
			if tc.logged != "" && !strings.Contains(logs.String(), tc.logged) {
				t.Errorf("log %q does not say %q", logs.String(), tc.logged)
			}
			if tc.logged != "" && !strings.Contains(err.Error(), tc.logged) {
				t.Errorf("Start: %v; does not say %q", err, tc.logged)
			}
			t.Logf("Start: %v; log: %s", err, strings.TrimSpace(logs.String()))
		})
	}
}

// lockedBuffer is a log destination that the engine's goroutines write
// while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

package zkserver

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/turnstile-go/turnstile/internal/tlsdial"
)

// A server with TLS serves a session on its secure port to a client that
// verifies its certificate and presents the trusted client certificate,
// refuses a client without one (ZooKeeper's default, ssl.clientAuth=need),
// and keeps serving its plain port, where the same data is.
func TestTLS(t *testing.T) {
	s, files := StartTLST(t, Options{})
	if s.SecureAddr() == "" || s.SecureAddr() == s.Addr() {
		t.Fatalf("SecureAddr %q beside Addr %q", s.SecureAddr(), s.Addr())
	}
	for _, f := range []string{files.Server.KeyStore, files.Server.TrustStore, files.CA, files.ClientCert, files.ClientKey} {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("TLS file %s: %v", f, err)
		}
	}

	cfg, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	secure := connectVia(t, zk.Dialer(tlsdial.Wrap(net.DialTimeout, cfg)), s.SecureAddr())
	if _, err := secure.Create("/over-tls", []byte("sealed"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create over TLS: %v", err)
	}
	// The server authenticated the TLS session as the client certificate's
	// subject: a node whose ACL names the creator carries that identity.
	if _, err := secure.Create("/mine", nil, 0, zk.AuthACL(zk.PermAll)); err != nil {
		t.Fatalf("create with the creator's ACL over TLS: %v", err)
	}
	acl, _, err := secure.GetACL("/mine")
	if err != nil || len(acl) != 1 || acl[0].Scheme != "x509" || acl[0].ID != files.ClientSubject {
		t.Errorf("ACL of a node created over TLS: %+v, %v; want x509:%s", acl, err, files.ClientSubject)
	}

	plain := connect(t, s.Addr())
	if data, _, err := plain.Get("/over-tls"); err != nil || string(data) != "sealed" {
		t.Errorf("the node on the plain port: %q, %v", data, err)
	}

	// Without a client certificate the server ends the connection: in TLS
	// 1.3 the client learns it on its first read.
	anonymous := cfg.Clone()
	anonymous.Certificates = nil
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", s.SecureAddr(), anonymous)
	if err == nil {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		var out []byte
		if _, err = io.WriteString(c, "srvr"); err == nil {
			out, err = io.ReadAll(c)
		}
		c.Close()
		if err == nil {
			t.Errorf("a client without a certificate was answered: %q", out)
		}
	}
	t.Logf("a client without a certificate: %v", err)
	if err != nil && !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without a certificate: %v; want the server's refusal of it", err)
	}
}

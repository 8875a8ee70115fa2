package zkserver

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// TLS makes a server serve its clients over TLS too, on a secure client
// port of its own (SecureAddr) beside the plain one (Addr), as ZooKeeper
// 3.5 and later do: the Netty connection factory (the default NIO one has
// no TLS) with secureClientPort and the ssl.keyStore.* and
// ssl.trustStore.* settings. The plain port stays open: the readiness
// checks and the four-letter words use it, and a test can show that a
// client on the wrong port gets nowhere. NewTLSFiles makes a throwaway set
// of files to fill it with.
type TLS struct {
	// KeyStore is a PKCS12 file holding the server's private key and its
	// certificate, which clients verify.
	KeyStore         string
	KeyStorePassword string
	// TrustStore is a PKCS12 file of trusted certificates: a client that
	// presents a certificate is accepted when it chains to one of them,
	// and is authenticated as its subject in the x509 scheme.
	TrustStore         string
	TrustStorePassword string
	// ClientAuth is ZooKeeper's ssl.clientAuth: "need" (ZooKeeper's
	// default, also when empty) refuses a client without a trusted
	// certificate, "want" asks for one, "none" asks for none.
	ClientAuth string
}

// nettyFactory is the connection factory that can serve TLS; it serves the
// plain port too once set, since ZooKeeper takes one factory class for both.
const nettyFactory = "org.apache.zookeeper.server.NettyServerCnxnFactory"

// config is the zoo.cfg lines that serve TLS on port. ZooKeeper turns the
// keys it does not know as such (ssl.*, serverCnxnFactory) into the system
// properties of the same name under "zookeeper.", which is where its TLS
// code reads them.
func (t *TLS) config(port int) [][2]string {
	kv := [][2]string{
		{"serverCnxnFactory", nettyFactory},
		{"secureClientPort", strconv.Itoa(port)},
		{"secureClientPortAddress", "127.0.0.1"},
		{"ssl.keyStore.location", t.KeyStore},
		{"ssl.keyStore.password", t.KeyStorePassword},
		{"ssl.keyStore.type", "PKCS12"},
	}
	if t.TrustStore != "" {
		kv = append(kv,
			[2]string{"ssl.trustStore.location", t.TrustStore},
			[2]string{"ssl.trustStore.password", t.TrustStorePassword},
			[2]string{"ssl.trustStore.type", "PKCS12"})
	}
	if t.ClientAuth != "" {
		kv = append(kv, [2]string{"ssl.clientAuth", t.ClientAuth})
	}
	return kv
}

// portsPerServer is how many client ports a server of these options has.
func (o Options) portsPerServer() int {
	if o.TLS != nil {
		return 2
	}
	return 1
}

// SecureAddr is the TLS client address "127.0.0.1:PORT" of a server
// started with Options.TLS, "" without; it stays the same across Stop and
// Restart.
func (s *Server) SecureAddr() string {
	if s.securePrt == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.securePrt))
}

// secureListening checks that the secure client port accepts connections:
// the server binds it after the plain port, which the other readiness
// checks use. A TLS handshake is not tried, since the server may want a
// client certificate that only the test holds.
func (s *Server) secureListening(ctx context.Context) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", s.SecureAddr())
	if err != nil {
		return fmt.Errorf("secure client port: %w", err)
	}
	return c.Close()
}

// Package tlsdial makes the connections of a ZooKeeper client TLS client
// connections, for a server's secureClientPort: the engine's Config.TLS
// and the command's -tls-* flags both dial through it.
package tlsdial

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// ErrHandshake wraps the error of a TLS handshake that failed: the server
// does not speak TLS on that port (the handshake ends in an EOF or a
// reset), refused the client's certificate, or presented one that does
// not verify. It is a matter of configuration far more often than of the
// network, so a client reports it louder than a refused connection.
var ErrHandshake = errors.New("TLS handshake")

// DialFunc is how go-zookeeper connects to one server: timeout bounds the
// whole connection, the TLS handshake included.
type DialFunc func(network, address string, timeout time.Duration) (net.Conn, error)

// Wrap returns a DialFunc that connects through dial and completes a TLS
// handshake with config over the connection before it returns it, so that
// whoever reads and writes the connection (the client, and anything
// wrapped around it) sees ZooKeeper's plaintext frames. The handshake is
// done here, within timeout, rather than on the first write: a server that
// does not speak TLS, or a certificate that does not verify, is a failed
// dial, which the client reports and retries like a refused connection,
// never a session that hangs half-open.
//
// When config names no ServerName, the host of each address is checked
// against the server's certificate, as crypto/tls.Dial does: an IP address
// must be among the certificate's IP SANs.
func Wrap(dial DialFunc, config *tls.Config) DialFunc {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		deadline := time.Now().Add(timeout)
		raw, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		cfg := config
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				raw.Close()
				return nil, fmt.Errorf("tls: server address %q: %w", address, err)
			}
			cfg = cfg.Clone()
			cfg.ServerName = host
		}
		conn := tls.Client(raw, cfg)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("%w with %s: %w", ErrHandshake, address, err)
		}
		return conn, nil
	}
}

// LoadConfig builds a client's TLS configuration from PEM files: caFile,
// the certificates the server's must chain to (empty: the system's
// roots), and certFile with keyFile, the certificate the client presents
// when the server asks for one (both empty: none).
func LoadConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate", caFile)
		}
		cfg.RootCAs = pool
	}
	switch {
	case certFile != "" && keyFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	case certFile != "" || keyFile != "":
		return nil, errors.New("a client certificate needs both its certificate and its key")
	}
	return cfg, nil
}

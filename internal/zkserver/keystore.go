package zkserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnstile-go/turnstile/internal/tlsdial"
)

// TLSFiles are the throwaway key material of a TLS test, made by
// NewTLSFiles: what Options.TLS names for the server, and the PEM files a
// Go client loads.
type TLSFiles struct {
	// Server fills Options.TLS: a keystore with the server's key and a
	// certificate for IP 127.0.0.1, and a truststore holding ClientCert.
	Server TLS
	// CA is the PEM certificate a client verifies the server's against:
	// the server's own, self-signed.
	CA string
	// ClientCert and ClientKey are the PEM certificate and key a client
	// presents; the server trusts the certificate itself (self-signed).
	ClientCert, ClientKey string
	// ClientSubject is ClientCert's subject the way ZooKeeper names the
	// x509 identity it authenticates with it, as in an ACL entry.
	ClientSubject string
}

// clientCommonName is the subject of the client certificate.
const clientCommonName = "turnstile test client"

// certValidity is how long the certificates are valid, from a day before
// they are made (a clock that steps back does not make them "not yet
// valid"): they serve one test run.
const certValidity = 7 * 24 * time.Hour

// NewTLSFiles makes the files of TLSFiles in dir, which must exist: the
// server's key pair and keystore with the JDK's keytool, as a ZooKeeper
// operator would, and the client's key pair in Go, since keytool cannot
// hand a private key over as PEM. It takes a few seconds: each keytool run
// starts a JVM.
func NewTLSFiles(ctx context.Context, dir string) (*TLSFiles, error) {
	keytool, err := findKeytool()
	if err != nil {
		return nil, err
	}
	pass := make([]byte, 16)
	if _, err := rand.Read(pass); err != nil {
		return nil, err
	}
	password := hex.EncodeToString(pass)
	f := &TLSFiles{
		Server: TLS{
			KeyStore:           filepath.Join(dir, "server.p12"),
			KeyStorePassword:   password,
			TrustStore:         filepath.Join(dir, "trust.p12"),
			TrustStorePassword: password,
		},
		CA:            filepath.Join(dir, "ca.pem"),
		ClientCert:    filepath.Join(dir, "client.pem"),
		ClientKey:     filepath.Join(dir, "client-key.pem"),
		ClientSubject: "CN=" + clientCommonName,
	}
	if err := writeClientPair(f.ClientCert, f.ClientKey); err != nil {
		return nil, err
	}
	days := fmt.Sprint(int(certValidity / (24 * time.Hour)))
	for _, args := range [][]string{
		{"-genkeypair", "-alias", "server", "-keyalg", "EC", "-groupname", "secp256r1",
			"-dname", "CN=127.0.0.1", "-ext", "san=ip:127.0.0.1",
			"-startdate", "-1d", "-validity", days,
			"-storetype", "PKCS12", "-keystore", f.Server.KeyStore,
			"-storepass", password, "-keypass", password},
		{"-exportcert", "-rfc", "-alias", "server", "-file", f.CA,
			"-storetype", "PKCS12", "-keystore", f.Server.KeyStore, "-storepass", password},
		{"-importcert", "-noprompt", "-alias", "client", "-file", f.ClientCert,
			"-storetype", "PKCS12", "-keystore", f.Server.TrustStore, "-storepass", password},
	} {
		if err := runKeytool(ctx, keytool, args); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// ClientConfig is a Go client's TLS configuration for a server of these
// files: it verifies the server's certificate against CA and presents the
// client certificate.
func (f *TLSFiles) ClientConfig() (*tls.Config, error) {
	return tlsdial.LoadConfig(f.CA, f.ClientCert, f.ClientKey)
}

// writeClientPair writes a fresh self-signed client certificate and its
// key as PEM.
func writeClientPair(certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: clientCommonName},
		NotBefore:    now.Add(-24 * time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("zkserver: client certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("zkserver: client key: %w", err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// runKeytool runs keytool once; it is killed if ctx ends first. The JVM
// flags only make its start cheaper.
func runKeytool(ctx context.Context, keytool string, args []string) error {
	args = append([]string{"-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1", "-J-XX:-UsePerfData"}, args...)
	out, err := exec.CommandContext(ctx, keytool, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("zkserver: keytool %s: %w\n%s", args[3], err, strings.TrimSpace(string(out)))
	}
	return nil
}

// findKeytool locates the JDK's keytool: $KEYTOOL, else the one beside the
// java that runs the server, else keytool on PATH.
func findKeytool() (string, error) {
	if k := os.Getenv("KEYTOOL"); k != "" {
		p, err := exec.LookPath(k)
		if err != nil {
			return "", fmt.Errorf("%w: KEYTOOL=%s: %v", ErrNotInstalled, k, err)
		}
		return p, nil
	}
	if in, err := findInstall(); err == nil {
		if java, err := filepath.EvalSymlinks(in.java); err == nil {
			k := filepath.Join(filepath.Dir(java), "keytool")
			if _, err := os.Stat(k); err == nil {
				return k, nil
			}
		}
	}
	k, err := exec.LookPath("keytool")
	if err != nil {
		return "", fmt.Errorf("%w: the JDK's keytool: %v", ErrNotInstalled, err)
	}
	return k, nil
}

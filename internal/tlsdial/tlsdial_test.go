package tlsdial

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// LoadConfig refuses what would only fail later, at a handshake: a CA file
// without a certificate, half a client key pair, a missing file.
func TestLoadConfigRefuses(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string][3]string{
		"CA without a certificate": {notPEM, "", ""},
		"missing CA":               {filepath.Join(dir, "none.pem"), "", ""},
		"certificate without key":  {"", notPEM, ""},
		"key without certificate":  {"", "", notPEM},
		"key pair not PEM":         {"", notPEM, notPEM},
	} {
		if cfg, err := LoadConfig(files[0], files[1], files[2]); err == nil {
			t.Errorf("%s: %+v, want an error", name, cfg)
		}
	}
	cfg, err := LoadConfig("", "", "")
	if err != nil || cfg.RootCAs != nil || len(cfg.Certificates) != 0 {
		t.Errorf("no files: %+v, %v; want the system's roots and no certificate", cfg, err)
	}
}

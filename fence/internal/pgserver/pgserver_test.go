package pgserver_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	_ "github.com/lib/pq"
	"go.uber.org/goleak"

	"github.com/turnstile-go/turnstile/fence/internal/pgserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartQueryClose(t *testing.T) {
	var dir string
	func() {
		s := pgserver.StartT(t)
		db, err := sql.Open("postgres", s.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v string
		if err := db.QueryRowContext(context.Background(), "SELECT current_setting('data_directory')").Scan(&v); err != nil {
			t.Fatal(err)
		}
		dir = v
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("data directory %s: %v", dir, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := db.PingContext(context.Background()); err == nil {
			t.Fatal("the server still answers after Close")
		}
	}()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("data directory %s left behind: %v", dir, err)
	}
}

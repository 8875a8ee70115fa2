package sqlfence_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstile-go/turnstile/fence"
	"github.com/turnstile-go/turnstile/fence/httpfence"
	"github.com/turnstile-go/turnstile/fence/sqlfence"
)

// The HTTP middleware over the SQL fence: the handler writes through the
// transaction the fence began (sqlfence.Tx), which commits only when the
// handler answers below 400 and the token is not stale.
func TestMiddlewareOverSQL(t *testing.T) {
	db := freshDB(t)
	f := newFence(t, db, "/svc/acct", sqlfence.Options{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tx := sqlfence.Tx(r.Context())
		if tx == nil {
			http.Error(w, "no transaction", http.StatusInternalServerError)
			return
		}
		b, _ := io.ReadAll(r.Body)
		n, _ := strconv.ParseInt(string(b), 10, 64)
		if _, err := tx.ExecContext(r.Context(), "UPDATE accounts SET balance = $1 WHERE id = 1", n); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if n < 0 {
			http.Error(w, "negative", http.StatusUnprocessableEntity) // after the write: it must roll back
			return
		}
		io.WriteString(w, "ok")
	})
	srv := httptest.NewServer(httpfence.Middleware(f.Verifier(), h, httpfence.Options{}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	put := func(tok int64, body string) int {
		req, _ := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader(body))
		httpfence.Set(req, fence.Token{Path: "/svc/acct", Value: tok}, "")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	if code := put(20, "5"); code != http.StatusOK || balance(t, db) != 5 {
		t.Fatalf("fresh: %d, balance %d", code, balance(t, db))
	}
	if code := put(30, "-1"); code != http.StatusUnprocessableEntity || balance(t, db) != 5 || fenceToken(t, db, "/svc/acct") != 20 {
		t.Fatalf("handler's 422: %d, balance %d, token %d; want the write and token rolled back", code, balance(t, db), fenceToken(t, db, "/svc/acct"))
	}
	if code := put(10, "7"); code != http.StatusConflict || balance(t, db) != 5 {
		t.Fatalf("stale: %d, balance %d", code, balance(t, db))
	}
	if code := put(30, "8"); code != http.StatusOK || balance(t, db) != 8 || fenceToken(t, db, "/svc/acct") != 30 {
		t.Fatalf("later grant: %d, balance %d", code, balance(t, db))
	}
}

package httpfence_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/turnstile-go/turnstile/fence"
	"github.com/turnstile-go/turnstile/fence/httpfence"
)

// A service that owns its data admits each write by the token it carries.
// A holder's client sets the token with
// &http.Client{Transport: &httpfence.Transport{Lease: lease}}; here the
// headers are set by hand, as a newer holder's and then a stalled one's.
func ExampleMiddleware() {
	v, _ := fence.NewVerifier("/locks/config", &fence.Memory{})
	config := ""
	write := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		config = string(b)
	})
	srv := httptest.NewServer(httpfence.Middleware(v, write, httpfence.Options{}))
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	put := func(token int64, body string) {
		req, _ := http.NewRequest(http.MethodPut, srv.URL, strings.NewReader(body))
		httpfence.Set(req, fence.Token{Path: "/locks/config", Value: token}, "")
		resp, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		msg, _ := io.ReadAll(resp.Body)
		fmt.Println(strings.TrimSpace(fmt.Sprint(resp.StatusCode, " ", string(msg))))
	}
	put(8192, "new")
	put(4096, "old")
	fmt.Println(config)
	// Output:
	// 200
	// 409 fence: token 4096 of lock /locks/config is stale: token 8192 was admitted
	// new
}

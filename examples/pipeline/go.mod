module github.com/turnstile-go/turnstile/examples/pipeline

go 1.26.0

require (
	github.com/turnstile-go/turnstile v0.1.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.24.0
)

require github.com/go-zookeeper/zk v1.0.4 // indirect

// An example, run from this repository: it builds the library beside it,
// with or without go.work (GOWORK=off). A module of its own so that
// golang.org/x/sync stays out of the library's go.mod.
replace github.com/turnstile-go/turnstile => ../..

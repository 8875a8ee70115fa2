module github.com/turnstile-go/turnstile/fence

go 1.26.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/lib/pq v1.12.3
	github.com/turnstile-go/turnstile v0.1.0
	go.uber.org/goleak v1.3.0
)

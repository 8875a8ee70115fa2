module github.com/turnstile-go/turnstile

go 1.25.0

require (
	github.com/go-zookeeper/zk v1.0.4
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.22.0
)

require github.com/stretchr/testify v1.11.1 // indirect

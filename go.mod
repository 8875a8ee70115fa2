module github.com/turnstile-go/turnstile

go 1.25.0

require (
	github.com/cockroachdb/datadriven v1.0.3
	github.com/go-zookeeper/zk v1.0.4
	go.uber.org/goleak v1.3.0
)

require (
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/stretchr/testify v1.11.1 // indirect
)

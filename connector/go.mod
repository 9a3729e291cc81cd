module github.com/svcforum/svc/connector

go 1.26.8

require github.com/svcforum/svc/sdk v0.0.0

require (
	github.com/creack/pty v1.1.24
	github.com/urfave/cli/v3 v3.14.0
	golang.org/x/mod v0.43.0
	golang.org/x/term v0.48.0
)

require golang.org/x/sys v0.50.0

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/modelcontextprotocol/go-sdk v1.8.0
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.20.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

replace github.com/svcforum/svc/sdk => ../sdk

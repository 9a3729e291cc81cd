module github.com/svcforum/svc/connector

go 1.26.8

require github.com/svcforum/svc/sdk v0.0.0

require (
	github.com/creack/pty v1.1.24
	github.com/urfave/cli/v3 v3.14.0
	golang.org/x/mod v0.43.0
	golang.org/x/term v0.48.0
)

require (
	github.com/pelletier/go-toml/v2 v2.2.4
	go.yaml.in/yaml/v3 v3.0.5
	golang.org/x/sys v0.50.0
)

require github.com/modelcontextprotocol/go-sdk v1.8.0 // indirect

replace github.com/svcforum/svc/sdk => ../sdk

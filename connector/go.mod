module github.com/svcforum/svc/connector

go 1.26.8

require github.com/svcforum/svc/sdk v0.0.0

require golang.org/x/mod v0.43.0 // indirect

replace github.com/svcforum/svc/sdk => ../sdk

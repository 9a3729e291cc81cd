module github.com/svcforum/svc/sdk

go 1.26.8

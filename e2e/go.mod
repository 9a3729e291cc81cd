module github.com/svcforum/svc/e2e

go 1.26.8

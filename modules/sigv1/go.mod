module github.com/svcforum/svc/modules/sigv1

go 1.26.8

require (
	filippo.io/edwards25519 v1.2.0
	github.com/svcforum/svc/contracts v0.0.0
)

replace github.com/svcforum/svc/contracts => ../../contracts

package port

import (
	"context"

	"gorm.io/gorm"
)

// Grants credits organisations' wallets by a rule of the service rather than by the operator (the
// billing module offers it; onboarding's welcome grant consumes it). A grant is a credit like the one
// `svc admin wallet credit` writes: the balance grows and a credit entry joins the ledger.
type Grants interface {
	// Grant adds g.Credits to g.OrgID's wallet on tx, the caller's transaction, so that the grant
	// commits or rolls back with the write that gives it. g.Key makes it happen once: a grant whose key
	// the ledger holds already (an earlier transaction's, or this one's) adds nothing, and granted is
	// false. The organisation is not looked up: the caller knows it exists (it may have created it on
	// tx). balance is the wallet's after the grant.
	Grant(ctx context.Context, tx *gorm.DB, g Grant) (balance int64, granted bool, err error)
}

// Grant is one grant of credits.
type Grant struct {
	OrgID   string
	Credits int64  // 1 to 1000000000000
	Reason  string // for the ledger, as an operator's credit's reason
	Key     string // "<module>:<what it is for>", at most 128 bytes; one grant per key, ever
}

package port

import (
	"context"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/write"
)

// The metered operations (WIRE.md section 3): every price list names each of them.
const (
	OpCreateThread            = "create_thread"
	OpCreateReply             = "create_reply"
	OpVote                    = "vote"
	OpClearVote               = "clear_vote"
	OpManageThreadAttachments = "manage_thread_attachments"
	OpManageReplyAttachments  = "manage_reply_attachments"
	OpTombstone               = "tombstone"
	OpMediaUpload             = "media_upload"
)

// Operations lists the metered operations in a fixed order.
var Operations = []string{OpCreateThread, OpCreateReply, OpVote, OpClearVote,
	OpManageThreadAttachments, OpManageReplyAttachments, OpTombstone, OpMediaUpload}

// Billing is the billing declaration of a metered request (the body's "billing" member, spec section
// 2, BillingDeclarationInput): the pricing version the agent accepts and the most it will pay.
type Billing struct {
	PricingVersion string `json:"pricing_version"`
	MaxCreditCost  int64  `json:"max_credit_cost"`
}

// Charge is one metered operation to charge.
type Charge struct {
	Operation      string  // one of Operations
	Billing        Billing // as the agent declared it
	Attachments    int     // attachments the operation carries, each charged the version's per_attachment
	ResourceID     string  // the thread, reply, vote or upload the charge is for
	IdempotencyKey string  // the request's Idempotency-Key
}

// Receipt is what a charge cost.
type Receipt struct {
	UsageEventID   string
	Price          int64
	PricingVersion string
	Balance        int64 // the organisation's balance after the charge
}

// Refund names a charge to give back: the service failed to perform what it charged for (an upload
// whose processing failed through the service's fault, WIRE.md section 9).
type Refund struct {
	Operation  string // the operation charged, one of Operations
	ResourceID string // the resource its charge named (Charge.ResourceID)
	Reason     string // why, kept in the ledger: for an upload, its failure_code
}

// Meter charges metered writes (the billing module offers it). Plan adds a charge to a planned write
// (write.Plan), so that the charge and the write commit or roll back together: a write that fails
// leaves no charge, and an idempotent replay, which never runs the write again, charges nothing. Its
// refusals are *problem.Problem: 409 pricing_version_not_accepted (with current_pricing_version),
// price_exceeds_cap (with effective_price) or insufficient_credits; the balance never goes negative.
type Meter interface {
	// Plan adds the charge to plan: its checks (version accepted, price within the cap, the debit) as
	// steps of plan, in that order, then its rows. The
	// receipt's Balance is a Late placeholder until the plan has run.
	Plan(ctx context.Context, plan *write.Plan, p Principal, c Charge) (Receipt, error)
	// Refund gives back, on tx, the charge of r.Operation for r.ResourceID: its price returns to the
	// wallet it was taken from, and a refund entry (naming the charge) joins the ledger and the agent's
	// usage. A charge is refunded at most once, whatever the number of calls or transactions: the
	// refunded charge is a unique key, so refunded is false, and nothing is written, when it was
	// refunded already, and when there is no such charge. The receipt is the refund's: its usage
	// event, the credits returned and the balance after them.
	Refund(ctx context.Context, tx *gorm.DB, r Refund) (receipt Receipt, refunded bool, err error)
}

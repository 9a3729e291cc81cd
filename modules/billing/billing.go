// Package billing meters the signed writes of svc (WIRE.md section 3): pricing versions with their
// price lists, one credit wallet per organisation, and the Meter that other modules call inside their
// own write transaction. A charge is one conditional update of the wallet (it can never overdraw) plus
// one usage event and one ledger row, all in the caller's transaction: a rolled-back write leaves no
// charge, and an idempotent replay, which never runs the write again, charges nothing.
//
// The module serves GET /api/v1/pricing on the public read plane and GET /agent-api/v1/wallet and
// GET /agent-api/v1/usage on the signed plane, and adds the operator's commands pricing and wallet
// (publish, list, credit, debit, audit).
package billing

// ID is the module's name: folder, package and configuration key.
const ID = "billing"

// Version is the module's release version (tags modules/billing/vX.Y.Z).
const Version = "0.1.0"

package billing

import (
	"context"
	"fmt"

	"github.com/svcforum/svc/contracts/port"
)

// maxSummaryLines bounds the ledger lines a summary reads.
const maxSummaryLines = 50

// WalletSummary returns orgID's balance and its newest ledger lines, at most n (port.WalletReader,
// which the owner's pages read).
func (w *Wallets) WalletSummary(ctx context.Context, orgID string, n int) (port.WalletSummary, error) {
	wallet, err := w.Get(ctx, orgID)
	if err != nil {
		return port.WalletSummary{}, err
	}
	s := port.WalletSummary{Balance: wallet.Balance, Recent: []port.LedgerLine{}}
	var rows []LedgerEntry
	if err := w.db.WithContext(ctx).Where("org_id = ?", orgID).Order("created_at DESC, id DESC").
		Limit(min(max(n, 0), maxSummaryLines)).Find(&rows).Error; err != nil {
		return s, fmt.Errorf("read ledger: %w", err)
	}
	for _, e := range rows {
		s.Recent = append(s.Recent, port.LedgerLine{Kind: e.Kind, Amount: e.Amount, BalanceAfter: e.BalanceAfter, Reason: e.Reason, At: e.CreatedAt.UTC()})
	}
	return s, nil
}

var _ port.WalletReader = (*Wallets)(nil)

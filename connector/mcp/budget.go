package mcp

import (
	"fmt"
	"time"

	"github.com/svcforum/svc/connector/profile"
	"github.com/svcforum/svc/sdk"
)

// BudgetWindow is the owner's rolling budget period.
const BudgetWindow = 24 * time.Hour

// Limits is the owner's budget in effect: PerWrite always (the owner's, or the default), PerDay nil
// when the owner set no daily budget.
type Limits struct {
	PerWrite int64
	PerDay   *int64
}

// DearestPrice is the current price of the dearest metered operation: the default per-write cap.
func DearestPrice(v *sdk.PricingVersion) int64 {
	p := v.Prices
	var max int64
	for _, c := range []int64{p.CreateThread, p.CreateReply, p.Vote, p.ClearVote, p.ManageThreadAttachments,
		p.ManageReplyAttachments, p.Tombstone, p.MediaUpload} {
		if c > max {
			max = c
		}
	}
	return max
}

// LimitsOf is the owner's budget from the profile's settings, with the default per-write cap.
func LimitsOf(b *profile.BudgetConfig, current *sdk.PricingVersion) Limits {
	l := Limits{PerWrite: DearestPrice(current)}
	if b == nil {
		return l
	}
	if b.PerWrite != nil {
		l.PerWrite = *b.PerWrite
	}
	l.PerDay = b.PerDay
	return l
}

// Held is what the pending writes of the idempotency window may still cost: the max_credit_cost each
// declared, held against the daily budget until its answer settles it (or the window ends: an answer
// lost for longer is taken as nothing charged).
func Held(writes []profile.MCPWrite, now time.Time) int64 {
	var sum int64
	for _, w := range writes {
		if w.Pending && now.Sub(w.At) < IdempotencyWindow {
			sum += w.MaxCreditCost
		}
	}
	return sum
}

// Spent is the credits charged within BudgetWindow before now, each usage event counted once.
func Spent(charges []profile.MCPSpend, now time.Time) int64 {
	var sum int64
	seen := map[string]bool{}
	for _, c := range charges {
		if now.Sub(c.At) >= BudgetWindow || c.At.After(now.Add(time.Minute)) {
			continue
		}
		if c.UsageEventID != "" {
			if seen[c.UsageEventID] {
				continue
			}
			seen[c.UsageEventID] = true
		}
		sum += c.Credits
	}
	return sum
}

// Prune drops the charges older than BudgetWindow.
func Prune(charges []profile.MCPSpend, now time.Time) []profile.MCPSpend {
	out := charges[:0]
	for _, c := range charges {
		if now.Sub(c.At) < BudgetWindow {
			out = append(out, c)
		}
	}
	return out
}

// Left is what remains of the daily budget (nil without one; never below zero).
func (l Limits) Left(spent int64) *int64 {
	if l.PerDay == nil {
		return nil
	}
	left := max(*l.PerDay-spent, 0)
	return &left
}

// Cap is the max_credit_cost a metered call declares: the smallest of the per-write cap, what is left of
// the daily budget and the model's own lower cap (nil when it gave none).
func (l Limits) Cap(spent int64, model *int64) int64 {
	c := l.PerWrite
	if left := l.Left(spent); left != nil && *left < c {
		c = *left
	}
	if model != nil && *model < c {
		c = max(*model, 0)
	}
	return c
}

// Refusal says why a call of the given price is refused locally under cap, or "" when it is covered.
func (l Limits) Refusal(price, spent int64, model *int64) string {
	c := l.Cap(spent, model)
	if price <= c {
		return ""
	}
	left := "no daily budget is set"
	if lf := l.Left(spent); lf != nil {
		left = fmt.Sprintf("%d of the daily budget of %d credits is left (%d spent in the last 24 hours)", *lf, *l.PerDay, spent)
	}
	switch {
	case model != nil && *model < price && *model <= l.PerWrite && (l.Left(spent) == nil || *model <= *l.Left(spent)):
		return fmt.Sprintf("this call costs %d credits now, more than the max_credit_cost of %d it was given; nothing was sent (%s)", price, *model, left)
	case price > l.PerWrite:
		return fmt.Sprintf("this call costs %d credits now, more than the owner's per-write cap of %d; nothing was sent (%s; the owner raises the cap with svc-connector budget --per-write N)", price, l.PerWrite, left)
	}
	return fmt.Sprintf("this call costs %d credits now, more than is left of the owner's daily budget; nothing was sent (%s; it frees up as charges age past 24 hours, or the owner raises it with svc-connector budget --per-day N)", price, left)
}

// Price is the current price of op carrying attachments (WIRE.md section 9: the operation's price plus
// per_attachment for each attachment in the request).
func Price(v *sdk.PricingVersion, op sdk.Operation, attachments int) (int64, bool) {
	p, ok := v.Prices.Of(op)
	if !ok {
		return 0, false
	}
	return p + v.PerAttachment*int64(attachments), true
}

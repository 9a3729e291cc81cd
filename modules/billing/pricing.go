package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// PricingFile is what `svc admin pricing publish --file` reads (WIRE.md section 8), validated against
// the published schema pricing-file.
type PricingFile struct {
	PricingVersion  string           `json:"pricing_version"`
	GracePeriodDays int              `json:"grace_period_days"`
	PerAttachment   int64            `json:"per_attachment"`
	Prices          map[string]int64 `json:"prices"`
}

// Price is one pricing version as the read plane and the operator see it.
type Price struct {
	PricingVersion  string           `json:"pricing_version"`
	Current         bool             `json:"current"`
	Prices          map[string]int64 `json:"prices"`
	PerAttachment   int64            `json:"per_attachment"`
	GracePeriodDays int              `json:"grace_period_days"`
	PublishedAt     time.Time        `json:"published_at"`
	SupersededAt    *time.Time       `json:"superseded_at"`
	AcceptedUntil   *time.Time       `json:"accepted_until"`
}

// publishLock is the PostgreSQL advisory lock key held while publishing. (The bytes of "svcprice".)
const publishLock int64 = 0x7376637072696365

// Pricing keeps the pricing versions.
type Pricing struct {
	db      *gorm.DB
	clock   port.Clock
	schemas *schema.Set
}

// NewPricing returns the pricing versions on db; files are validated against schemas.
func NewPricing(db *gorm.DB, clock port.Clock, schemas *schema.Set) *Pricing {
	return &Pricing{db: db, clock: clock, schemas: schemas}
}

// Publish makes the version in raw (a pricing file) current and starts the grace period of the one it
// supersedes, which stays accepted for its own grace_period_days. A version code is never reused.
func (p *Pricing) Publish(ctx context.Context, raw []byte) (Price, error) {
	v, _, err := p.publish(ctx, raw, false)
	return v, err
}

// publish is Publish; with ifNone it publishes only while no version was ever published, and
// published is false (with the current version, or the newest) when one was.
func (p *Pricing) publish(ctx context.Context, raw []byte, ifNone bool) (_ Price, published bool, _ error) {
	var f PricingFile
	if err := p.schemas.Decode("pricing-file", raw, &f); err != nil {
		var se *schema.Error
		if errors.As(err, &se) {
			return Price{}, false, fileProblem(raw, se)
		}
		return Price{}, false, err
	}
	prices, err := json.Marshal(f.Prices)
	if err != nil {
		return Price{}, false, fmt.Errorf("encode prices: %w", err)
	}
	now := p.clock.Now()
	v := PricingVersion{Code: f.PricingVersion, Prices: string(prices), PerAttachment: f.PerAttachment,
		GracePeriodDays: f.GracePeriodDays, PublishedAt: now}
	existing := false
	err = p.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		// One publication at a time: on PostgreSQL a transaction-scoped advisory lock (a row lock
		// cannot serialise the first publication, when no row exists); SQLite runs one writer at a
		// time already.
		if tx.Dialector.Name() == "postgres" {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", publishLock).Error; err != nil {
				return fmt.Errorf("lock pricing: %w", err)
			}
		}
		if ifNone {
			var found []PricingVersion
			if err := tx.Order("seq DESC").Limit(1).Find(&found).Error; err != nil {
				return fmt.Errorf("read pricing versions: %w", err)
			}
			if len(found) > 0 {
				v, existing = found[0], true
				return nil
			}
		}
		var taken int64
		if err := tx.Model(&PricingVersion{}).Where("code = ?", f.PricingVersion).Count(&taken).Error; err != nil {
			return fmt.Errorf("read pricing versions: %w", err)
		}
		if taken > 0 {
			return problem.Newf(problem.Conflict, "the pricing version %q was published before; a version code is never reused", f.PricingVersion)
		}
		var current []PricingVersion
		if err := tx.Where("superseded_at IS NULL").Find(&current).Error; err != nil {
			return fmt.Errorf("read current pricing version: %w", err)
		}
		var seq int64
		if err := tx.Model(&PricingVersion{}).Select("COALESCE(MAX(seq), 0)").Scan(&seq).Error; err != nil {
			return fmt.Errorf("read pricing sequence: %w", err)
		}
		v.Seq = seq + 1
		if err := tx.Create(&v).Error; err != nil {
			return fmt.Errorf("publish pricing version: %w", err)
		}
		for _, c := range current {
			until := now.Add(time.Duration(c.GracePeriodDays) * 24 * time.Hour)
			if err := tx.Model(&PricingVersion{}).Where("code = ?", c.Code).
				Updates(map[string]any{"superseded_at": now, "accepted_until": until}).Error; err != nil {
				return fmt.Errorf("supersede %s: %w", c.Code, err)
			}
		}
		return nil
	})
	if err != nil {
		return Price{}, false, err
	}
	out, err := view(v, v.SupersededAt == nil)
	return out, !existing, err
}

// List returns every pricing version, newest first.
func (p *Pricing) List(ctx context.Context) ([]Price, error) {
	var vs []PricingVersion
	if err := p.db.WithContext(ctx).Order("seq DESC").Find(&vs).Error; err != nil {
		return nil, fmt.Errorf("list pricing versions: %w", err)
	}
	out := make([]Price, 0, len(vs))
	for _, v := range vs {
		pr, err := view(v, v.SupersededAt == nil)
		if err != nil {
			return nil, err
		}
		out = append(out, pr)
	}
	return out, nil
}

// Accepted returns the versions accepted at now (the current one first, then those in their grace
// period, newest first) and the current one's code ("" before the first publication).
func (p *Pricing) Accepted(ctx context.Context, now time.Time) (versions []Price, current string, err error) {
	// Few versions exist, and times compare exactly in Go on either database.
	var vs []PricingVersion
	if err := p.db.WithContext(ctx).Order("seq DESC").Find(&vs).Error; err != nil {
		return nil, "", fmt.Errorf("list pricing versions: %w", err)
	}
	for _, v := range vs {
		if v.AcceptedUntil != nil && !v.AcceptedUntil.After(now) {
			continue
		}
		pr, err := view(v, v.SupersededAt == nil)
		if err != nil {
			return nil, "", err
		}
		if pr.Current {
			current = pr.PricingVersion
		}
		versions = append(versions, pr)
	}
	return versions, current, nil
}

// accepted returns the version code on tx if it is accepted at now, else a pricing_version_not_accepted
// problem naming the current version.
func accepted(tx *gorm.DB, code string, now time.Time) (PricingVersion, error) {
	var vs []PricingVersion
	if err := tx.Where("code = ?", code).Limit(1).Find(&vs).Error; err != nil {
		return PricingVersion{}, fmt.Errorf("read pricing version: %w", err)
	}
	if len(vs) == 1 && (vs[0].AcceptedUntil == nil || vs[0].AcceptedUntil.After(now)) {
		return vs[0], nil
	}
	var current []string
	if err := tx.Model(&PricingVersion{}).Where("superseded_at IS NULL").Limit(1).Pluck("code", &current).Error; err != nil {
		return PricingVersion{}, fmt.Errorf("read current pricing version: %w", err)
	}
	p := problem.New(problem.PricingVersionNotAccepted, "The declared pricing_version is not accepted: it is unknown, or superseded and past its grace period. Read GET /api/v1/pricing and declare the current version.")
	if len(current) == 1 {
		return PricingVersion{}, p.With("current_pricing_version", current[0])
	}
	return PricingVersion{}, p.With("current_pricing_version", nil)
}

func view(v PricingVersion, current bool) (Price, error) {
	pr := Price{PricingVersion: v.Code, Current: current, PerAttachment: v.PerAttachment,
		GracePeriodDays: v.GracePeriodDays, PublishedAt: v.PublishedAt.UTC(), SupersededAt: utc(v.SupersededAt),
		AcceptedUntil: utc(v.AcceptedUntil)}
	if err := json.Unmarshal([]byte(v.Prices), &pr.Prices); err != nil {
		return Price{}, fmt.Errorf("decode prices of %s: %w", v.Code, err)
	}
	return pr, nil
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

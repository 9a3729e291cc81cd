package media

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// Assets offers port.Assets: the module that attaches images resolves them here, in its own write's
// transaction, without importing media.
type Assets struct {
	urls urls
}

// NewAssets returns the port.
func NewAssets(d *plugin.Deployment) *Assets { return &Assets{urls: urls{base: d.BaseURL}} }

// Resolve returns the assets that ids name, read on tx.
func (a *Assets) Resolve(ctx context.Context, tx *gorm.DB, ids []string) (map[string]port.Asset, error) {
	out := make(map[string]port.Asset, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []assetRow
	if err := tx.WithContext(ctx).Where("id IN ?", ids).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("resolve assets: %w", err)
	}
	for _, r := range rows {
		as := port.Asset{ID: r.ID, OwnerID: r.OwnerID, Status: r.Status, AIGenerated: r.AIGenerated}
		if r.Status == port.AssetReady && r.VariantFormat != nil {
			as.Format, as.Width, as.Height = *r.VariantFormat, r.Width, r.Height
			as.Display = port.Variant{Width: r.DisplayWidth, Height: r.DisplayHeight}
			as.Thumb = port.Variant{Width: r.ThumbWidth, Height: r.ThumbHeight}
		}
		out[r.ID] = as
	}
	return out, nil
}

// URL is the public address of an asset's variant.
func (a *Assets) URL(assetID, variant string) string { return a.urls.variant(assetID, variant) }

var _ port.Assets = (*Assets)(nil)

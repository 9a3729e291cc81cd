package port

import (
	"context"

	"gorm.io/gorm"
)

// Asset is an uploaded image as the module that attaches it sees it (the media module offers it
// through Assets). Only a ready asset has dimensions and variants.
type Asset struct {
	ID          string
	OwnerID     string // the agent that uploaded it
	Status      string // processing, ready or failed
	Format      string // the variants' format: jpeg or png
	Width       int    // the image, upright
	Height      int
	AIGenerated bool
	Display     Variant
	Thumb       Variant
}

// Variant is one served size of an asset.
type Variant struct {
	Width, Height int
}

// The states of an upload (WIRE.md section 9).
const (
	AssetProcessing = "processing"
	AssetReady      = "ready"
	AssetFailed     = "failed"
)

// Assets resolves uploaded images for the modules that attach them (the media module offers it).
type Assets interface {
	// Resolve returns the assets ids name that exist, by id, read on tx (the attaching write's
	// transaction); an id that names nothing is absent from the answer.
	Resolve(ctx context.Context, tx *gorm.DB, ids []string) (map[string]Asset, error)
	// URL is the public address of an asset's variant ("display" or "thumb").
	URL(assetID, variant string) string
}

// Attachments says whether an asset is shown with visible content (the forum offers it), so that the
// media module serves an image only while it is.
type Attachments interface {
	Visible(ctx context.Context, assetID string) (bool, error)
}

package media

import "time"

// assetRow is an upload: its state, what was sent, and once processed its variants.
type assetRow struct {
	ID           string `gorm:"primaryKey;size:36"`
	OwnerID      string `gorm:"size:36;not null"`
	OrgID        string `gorm:"size:36;not null"`
	Status       string `gorm:"size:16;not null"`
	FailureCode  *string
	SourceFormat string `gorm:"size:8;not null"`
	SourceBytes  int64  `gorm:"not null"`
	AIGenerated  bool   `gorm:"not null"`
	// Set once ready: the upright image's size, and the variants' format and sizes.
	Width         int
	Height        int
	VariantFormat *string
	DisplayWidth  int
	DisplayHeight int
	DisplayBytes  int64
	ThumbWidth    int
	ThumbHeight   int
	ThumbBytes    int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

func (assetRow) TableName() string { return "media_assets" }

// The failure codes of an upload that could not be processed.
const (
	FailureUndecodable = "undecodable"         // the image's data does not decode (truncated, corrupt)
	FailureProcessing  = "processing_error"    // processing failed in a way retrying did not mend
	FailureStorage     = "storage_unavailable" // its bytes could not be read or kept, after every retry
)

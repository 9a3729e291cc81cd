package media

import (
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
)

// Migrations are the module's schema steps: append-only and frozen, each with its own struct copies.
func Migrations() plugin.Migrations {
	return plugin.Migrations{Module: ID, Steps: []*gormigrate.Migration{
		{ID: "media_0001_assets", Migrate: func(tx *gorm.DB) error {
			type asset struct {
				ID            string  `gorm:"primaryKey;size:36"`
				OwnerID       string  `gorm:"size:36;not null;index:idx_media_assets_owner"`
				OrgID         string  `gorm:"size:36;not null"`
				Status        string  `gorm:"size:16;not null"`
				FailureCode   *string `gorm:"size:32"`
				SourceFormat  string  `gorm:"size:8;not null"`
				SourceBytes   int64   `gorm:"not null"`
				AIGenerated   bool    `gorm:"not null"`
				Width         int     `gorm:"not null"`
				Height        int     `gorm:"not null"`
				VariantFormat *string `gorm:"size:8"`
				DisplayWidth  int     `gorm:"not null"`
				DisplayHeight int     `gorm:"not null"`
				DisplayBytes  int64   `gorm:"not null"`
				ThumbWidth    int     `gorm:"not null"`
				ThumbHeight   int     `gorm:"not null"`
				ThumbBytes    int64   `gorm:"not null"`
				CreatedAt     time.Time
				UpdatedAt     time.Time
			}
			return tx.Table("media_assets").Migrator().CreateTable(&asset{})
		}},
	}}
}

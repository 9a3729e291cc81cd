package media

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// Status is an upload as its owner reads it (MediaUploadStatus).
type Status struct {
	AssetID     string    `json:"asset_id"`
	Status      string    `json:"status"`
	FailureCode *string   `json:"failure_code"`
	Format      string    `json:"format"`
	Bytes       int64     `json:"bytes"`
	AIGenerated bool      `json:"ai_generated"`
	Width       *int      `json:"width"`
	Height      *int      `json:"height"`
	Variants    *Variants `json:"variants"`
	CreatedAt   time.Time `json:"created_at"`
}

// Variants are the served sizes of a ready upload.
type Variants struct {
	Display VariantView `json:"display"`
	Thumb   VariantView `json:"thumb"`
}

// VariantView is one served size.
type VariantView struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	Bytes       int64  `json:"bytes"`
}

// status answers the upload's owner; anyone else, and an id that names nothing, gets 404
// upload_not_found: whether an upload exists is nobody else's business.
func (u *Uploads) status(c *gin.Context) {
	notFound := problem.New(problem.UploadNotFound, "You have no upload with this id.")
	id := c.Param("attachment_id")
	if !contracts.IsID(id) {
		render.Problem(c, notFound)
		return
	}
	pr, _ := port.PrincipalFrom(c.Request.Context())
	var row assetRow
	err := u.db.WithContext(c.Request.Context()).Where("id = ? AND owner_id = ?", id, pr.AgentID).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		render.Problem(c, notFound)
		return
	case err != nil:
		render.Error(c, fmt.Errorf("read upload: %w", err))
		return
	}
	render.JSON(c, http.StatusOK, u.urls.status(row))
}

func (u urls) status(row assetRow) Status {
	s := Status{AssetID: row.ID, Status: row.Status, FailureCode: row.FailureCode, Format: row.SourceFormat,
		Bytes: row.SourceBytes, AIGenerated: row.AIGenerated, CreatedAt: row.CreatedAt.UTC()}
	if row.Status == port.AssetReady && row.VariantFormat != nil {
		w, h := row.Width, row.Height
		s.Width, s.Height = &w, &h
		ct := contentType(*row.VariantFormat)
		s.Variants = &Variants{
			Display: VariantView{URL: u.variant(row.ID, VariantDisplay), ContentType: ct, Width: row.DisplayWidth, Height: row.DisplayHeight, Bytes: row.DisplayBytes},
			Thumb:   VariantView{URL: u.variant(row.ID, VariantThumb), ContentType: ct, Width: row.ThumbWidth, Height: row.ThumbHeight, Bytes: row.ThumbBytes},
		}
	}
	return s
}

// contentType is the media type of a variant format.
func contentType(format string) string {
	if format == FormatPNG {
		return "image/png"
	}
	return "image/jpeg"
}

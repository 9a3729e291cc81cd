package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// Images serves the variants of ready assets on the public listener, only while some visible content
// shows them (WIRE.md section 9).
type Images struct {
	db          *gorm.DB
	storage     Storage
	attachments port.Attachments // nil when no enabled module attaches images: then nothing is served
}

// ImagesParams are what Images needs; the attachments port is offered by the module that attaches
// images (the forum), when it is enabled.
type ImagesParams struct {
	fx.In
	DB          plugin.ReadDB
	Storage     Storage
	Attachments port.Attachments `optional:"true"`
}

// NewImages returns the public image endpoint.
func NewImages(p ImagesParams) *Images {
	return &Images{db: p.DB.DB, storage: p.Storage, attachments: p.Attachments}
}

// Routes are GET and HEAD /media/{asset_id}/{variant}.
func (im *Images) Routes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(r gin.IRouter) {
		r.GET(ServePath+"/:asset_id/:variant", im.serve)
		r.HEAD(ServePath+"/:asset_id/:variant", im.serve)
	}}
}

// serve answers one variant. Its bytes never change for an id (a new image is a new upload), so the
// answer is cacheable for a year and its ETag is the id and variant; everything that may change (the
// asset not yet ready, the content that showed it tombstoned or hidden) answers 404, not cached.
func (im *Images) serve(c *gin.Context) {
	ctx := c.Request.Context()
	id, variant := c.Param("asset_id"), c.Param("variant")
	notFound := func() {
		c.Header("Cache-Control", "no-store")
		render.Problem(c, problem.New(problem.AssetNotFound, "No image is published at this address."))
	}
	if !contracts.IsID(id) || (variant != VariantDisplay && variant != VariantThumb) {
		notFound()
		return
	}
	var row assetRow
	err := im.db.WithContext(ctx).Select("id", "status", "variant_format").Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) || (err == nil && (row.Status != port.AssetReady || row.VariantFormat == nil)) {
		notFound()
		return
	}
	if err != nil {
		render.Error(c, fmt.Errorf("read asset: %w", err))
		return
	}
	visible, err := im.visible(ctx, id)
	if err != nil {
		render.Error(c, fmt.Errorf("is asset %s shown: %w", id, err))
		return
	}
	if !visible {
		notFound()
		return
	}
	etag := `"` + id + "-" + variant + `"`
	immutable := func() {
		c.Header("ETag", etag)
		c.Header("Cache-Control", "public, max-age=31536000, immutable")
		c.Header("X-Content-Type-Options", "nosniff")
		c.Header("Content-Security-Policy", "default-src 'none'")
	}
	if matches(c.GetHeader("If-None-Match"), etag) {
		immutable()
		c.Status(http.StatusNotModified)
		return
	}
	rc, size, err := im.storage.Get(ctx, variantKey(id, variant))
	if errors.Is(err, ErrNoObject) {
		notFound() // a ready asset whose variant is gone: an operator removed it
		return
	}
	if err != nil {
		_ = c.Error(err)
		render.Problem(c, problem.New(problem.MediaUnavailable, "The image's storage is not reachable right now. Retry shortly.").With("retry_after_seconds", 1))
		return
	}
	defer rc.Close()
	immutable()
	c.Header("Content-Type", contentType(*row.VariantFormat))
	c.Header("Content-Length", strconv.FormatInt(size, 10))
	c.Status(http.StatusOK)
	if c.Request.Method == http.MethodHead {
		return
	}
	_, _ = io.Copy(c.Writer, rc) // a client that goes away mid-image is no error of ours
}

// visible says whether content that people may see shows the asset.
func (im *Images) visible(ctx context.Context, id string) (bool, error) {
	if im.attachments == nil {
		return false, nil
	}
	return im.attachments.Visible(ctx, id)
}

// matches reports whether an If-None-Match value (a list of entity tags, or *) names etag, weakly.
func matches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

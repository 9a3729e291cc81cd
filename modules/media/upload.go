package media

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
)

// The agent-plane paths of the module, relative to plugin.AgentPrefix.
const (
	UploadsPath = "/media/uploads"
)

// Uploads serves the agent plane's media routes: the upload, and its status for its owner.
type Uploads struct {
	cfg     Config
	db      *gorm.DB
	clock   port.Clock
	meter   port.Meter
	jobs    port.Jobs
	storage Storage
	schemas *schema.Set
	urls    urls
	log     *slog.Logger
}

// NewUploads returns the upload endpoints.
func NewUploads(cfg Config, db *gorm.DB, clock port.Clock, meter port.Meter, jobs port.Jobs, storage Storage,
	schemas *schema.Set, d *plugin.Deployment, log *slog.Logger) *Uploads {
	return &Uploads{cfg: cfg, db: db, clock: clock, meter: meter, jobs: jobs, storage: storage, schemas: schemas,
		urls: urls{base: d.BaseURL}, log: log}
}

// Routes are the module's signed routes: the upload is a write with its own body limit and receive
// timeout (WIRE.md section 9), planned with the guard's admission first (database.Write), so that it
// is one round trip and one commit on PostgreSQL; the status is a read.
func (u *Uploads) Routes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Agent, Agent: []plugin.AgentRoute{
		{Method: http.MethodPost, Path: UploadsPath, Write: true, Planned: true, MaxBody: MaxFile + MaxForm,
			ReceiveTimeout: u.cfg.ReceiveTimeout, Handlers: []gin.HandlerFunc{u.upload}},
		{Method: http.MethodGet, Path: UploadsPath + "/:attachment_id", Handlers: []gin.HandlerFunc{u.status}},
	}}
}

// Accepted answers an upload: 202 MediaUploadAccepted.
type Accepted struct {
	AssetID   string     `json:"asset_id"`
	Status    string     `json:"status"`
	StatusURL string     `json:"status_url"`
	Charge    ChargeView `json:"charge"`
}

// ChargeView is what an upload cost.
type ChargeView struct {
	UsageEventID   string `json:"usage_event_id"`
	Price          int64  `json:"price"`
	PricingVersion string `json:"pricing_version"`
	Balance        int64  `json:"balance"`
}

// ProcessArgs is the job that makes an upload safe to serve.
type ProcessArgs struct {
	AssetID string `json:"asset_id"`
}

func (ProcessArgs) Kind() string { return "media_process" }

// upload takes a signed multipart upload: the form and the image's header are checked before anything
// is kept, the original is stored, and then one planned write takes the guard's admission, records the
// upload, charges media_upload and queues its processing. A refused or failed upload keeps nothing and
// charges nothing: the original is deleted whatever refused it, the admission included.
func (u *Uploads) upload(c *gin.Context) {
	ctx := c.Request.Context()
	body, err := u.body(c)
	if err != nil {
		render.Error(c, err)
		return
	}
	if ct := c.Request.Header.Values("Content-Type"); len(ct) > 1 {
		render.Problem(c, problem.New(problem.BadRequest, "The request has more than one Content-Type header."))
		return
	}
	form, err := parseForm(u.schemas, c.GetHeader("Content-Type"), body)
	if err != nil {
		render.Error(c, err)
		return
	}
	head, p := Sniff(form.File)
	if p != nil {
		render.Problem(c, p)
		return
	}
	id := uuid.Must(uuid.NewV7()).String()
	kept := false // the upload is recorded, or may be: its original stays
	defer func() {
		if kept {
			return
		}
		// Nothing refers to the original of an upload refused, failed or panicking after the Put (or
		// during it: an S3 timeout after the server kept the object): remove it.
		if derr := u.storage.Delete(context.WithoutCancel(ctx), originalKey(id)); derr != nil {
			u.log.WarnContext(ctx, "the original of an upload that was not recorded was not deleted", "asset_id", id, "error", derr)
		}
	}()
	if err := u.storage.Put(ctx, originalKey(id), form.File, "application/octet-stream"); err != nil {
		_ = c.Error(err)
		render.Problem(c, problem.New(problem.MediaUnavailable, "The upload could not be stored right now; nothing was charged. Retry shortly.").With("retry_after_seconds", 1))
		return
	}
	status, out, err := database.Write(ctx, u.db, func(p *write.Plan) (int, any, error) {
		pr, _ := port.PrincipalFrom(ctx)
		now := u.clock.Now().UTC().Truncate(time.Microsecond)
		row := assetRow{ID: id, OwnerID: pr.AgentID, OrgID: pr.OrgID, Status: port.AssetProcessing,
			SourceFormat: head.Format, SourceBytes: int64(len(form.File)), AIGenerated: form.AIGenerated,
			Width: head.Width, Height: head.Height, CreatedAt: now, UpdatedAt: now}
		p.Add(p.Build().Create(&row), 1, nil)
		r, err := u.meter.Plan(ctx, p, pr, port.Charge{Operation: port.OpMediaUpload, Billing: form.Billing,
			ResourceID: id, IdempotencyKey: c.GetHeader("Idempotency-Key")})
		if err != nil {
			return 0, nil, err
		}
		if err := u.jobs.InsertIn(p, ProcessArgs{AssetID: id}, &river.InsertOpts{MaxAttempts: u.cfg.Attempts, Queue: Queue}); err != nil {
			return 0, nil, err
		}
		return http.StatusAccepted, Accepted{AssetID: id, Status: port.AssetProcessing,
			StatusURL: plugin.AgentPrefix + UploadsPath + "/" + id,
			Charge:    ChargeView{UsageEventID: r.UsageEventID, Price: r.Price, PricingVersion: r.PricingVersion, Balance: r.Balance}}, nil
	})
	if errors.Is(err, port.ErrMaybeCommitted) {
		kept = true // the upload may be recorded, and its job would need the original
		u.log.WarnContext(ctx, "an upload's commit failed and may have happened: its original is kept", "asset_id", id)
	}
	if err != nil {
		render.Error(c, err)
		return
	}
	kept = true
	render.Raw(c, status, out)
}

// body is the upload's raw bytes: those the guard read and verified, or (without a guard, in a
// module's own tests) read here under the same limit.
func (u *Uploads) body(c *gin.Context) ([]byte, error) {
	if b, ok := c.Get(gin.BodyBytesKey); ok {
		if raw, ok := b.([]byte); ok {
			return raw, nil
		}
	}
	raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, MaxFile+MaxForm))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, problem.Newf(problem.BodyTooLarge, "The request body exceeds %d bytes.", MaxFile+MaxForm)
	}
	return raw, err
}

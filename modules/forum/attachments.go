package forum

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// The agent-plane paths of the attachment PUTs, relative to plugin.AgentPrefix.
const (
	ThreadAttachmentsPath = "/threads/:thread_id/attachments"
	ReplyAttachmentsPath  = "/replies/:reply_id/attachments"
)

// attachmentRow is one image shown with a post, in order. What the read plane shows of the asset (its
// format and sizes) is copied from the media module when it is attached: an asset never changes once
// ready, and the read plane then needs no other module to show it.
type attachmentRow struct {
	ID            string `gorm:"primaryKey;size:36"`
	PostKind      string `gorm:"size:8;not null"`
	PostID        string `gorm:"size:36;not null"`
	Position      int    `gorm:"not null"`
	AssetID       string `gorm:"size:36;not null"`
	AltText       string `gorm:"not null"`
	Caption       *string
	IsCover       bool   `gorm:"not null"`
	AIGenerated   bool   `gorm:"not null"`
	Format        string `gorm:"size:8;not null"`
	Width         int    `gorm:"not null"`
	Height        int    `gorm:"not null"`
	DisplayWidth  int    `gorm:"not null"`
	DisplayHeight int    `gorm:"not null"`
	ThumbWidth    int    `gorm:"not null"`
	ThumbHeight   int    `gorm:"not null"`
	CreatedAt     time.Time
}

func (attachmentRow) TableName() string { return "forum_attachments" }

// Attachment is an image of a post on the read plane.
type Attachment struct {
	AssetID     string   `json:"asset_id"`
	AltText     string   `json:"alt_text"`
	Caption     *string  `json:"caption"`
	IsCover     bool     `json:"is_cover"`
	AIGenerated bool     `json:"ai_generated"`
	ContentType string   `json:"content_type"`
	Width       int      `json:"width"`
	Height      int      `json:"height"`
	Display     ImageURL `json:"display"`
	Thumb       ImageURL `json:"thumb"`
}

// ImageURL is one served size of an attachment.
type ImageURL struct {
	URL    string `json:"url"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// ManageAttachmentsRequest is PUT /agent-api/v1/{threads|replies}/{id}/attachments.
type ManageAttachmentsRequest struct {
	Billing     port.Billing      `json:"billing"`
	Attachments []AttachmentInput `json:"attachments"`
}

// ManagedAttachmentsResponse answers it.
type ManagedAttachmentsResponse struct {
	TargetKind  string       `json:"target_kind"`
	TargetID    string       `json:"target_id"`
	Attachments []Attachment `json:"attachments"`
	Charge      ChargeView   `json:"charge"`
}

// checkAttachments applies what the schemas cannot say to a post's attachments: the media module must
// be enabled (422 otherwise: this deployment keeps no images), an asset at most once and at most one
// cover (422), then no private key in any alt text or caption (422), then the content policy on them
// (400).
func (w *Writes) checkAttachments(list []AttachmentInput) *problem.Problem {
	if len(list) == 0 {
		return nil
	}
	if w.assets == nil {
		return invalid("/attachments", "unavailable", "this deployment has no media module, so it takes no attachments: send the post without them")
	}
	seen := map[string]bool{}
	covers := 0
	for i, a := range list {
		at := fmt.Sprintf("/attachments/%d", i)
		if seen[a.AssetID] {
			return invalid(at+"/asset_id", "duplicate", "the asset is already in the list: each image appears once")
		}
		seen[a.AssetID] = true
		if a.IsCover != nil && *a.IsCover {
			if covers++; covers > 1 {
				return invalid(at+"/is_cover", "cover", "only one attachment may be the cover")
			}
		}
	}
	if p := (post{attachments: list}).keyIn(); p != nil {
		return p
	}
	for pointer, s := range (post{attachments: list}).texts() { // alt texts and captions: one line each
		if p := policy(pointer, s, false); p != nil {
			return p
		}
	}
	return nil
}

// planAttach adds list to a planned write as the images of a post, and returns their rows. The assets
// are resolved before the write: a ready asset never changes, so what was read stays true when the
// write commits.
func (w *Writes) planAttach(ctx context.Context, plan *write.Plan, p port.Principal, kind, postID string, list []AttachmentInput, now time.Time) ([]attachmentRow, error) {
	if len(list) == 0 {
		return nil, nil
	}
	rows, err := w.attachmentRows(ctx, plan.Read, p, kind, postID, list, now)
	var refusal *problem.Problem
	if errors.As(err, &refusal) {
		plan.Refuse(refusal)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	plan.Add(plan.Build().Create(&rows), int64(len(rows)), nil)
	return rows, nil
}

// attachmentRows resolves list on db and returns its rows for the post: each asset must be the
// signer's (404 asset_not_found otherwise, as for one that does not exist) and ready (409
// asset_not_ready).
func (w *Writes) attachmentRows(ctx context.Context, db *gorm.DB, p port.Principal, kind, postID string, list []AttachmentInput, now time.Time) ([]attachmentRow, error) {
	ids := make([]string, len(list))
	for i, a := range list {
		ids[i] = a.AssetID
	}
	assets, err := w.assets.Resolve(ctx, db, ids)
	if err != nil {
		return nil, err
	}
	rows := make([]attachmentRow, 0, len(list))
	for i, a := range list {
		at := fmt.Sprintf("/attachments/%d/asset_id", i)
		as, ok := assets[a.AssetID]
		if !ok || as.OwnerID != p.AgentID {
			return nil, problem.New(problem.AssetNotFound, "You have no upload with the id at "+at+".").With("pointer", at)
		}
		if as.Status != port.AssetReady {
			return nil, problem.Newf(problem.AssetNotReady, "The upload at %s is %s, not ready: poll its status_url until it is ready.", at, as.Status).
				With("pointer", at).With("asset_status", as.Status)
		}
		rows = append(rows, attachmentRow{ID: newID(), PostKind: kind, PostID: postID, Position: i, AssetID: as.ID,
			AltText: a.AltText, Caption: a.Caption, IsCover: a.IsCover != nil && *a.IsCover, AIGenerated: as.AIGenerated,
			Format: as.Format, Width: as.Width, Height: as.Height, DisplayWidth: as.Display.Width, DisplayHeight: as.Display.Height,
			ThumbWidth: as.Thumb.Width, ThumbHeight: as.Thumb.Height, CreatedAt: now})
	}
	return rows, nil
}

// manageThread is PUT /threads/{thread_id}/attachments.
func (w *Writes) manageThread(c *gin.Context) {
	w.manage(c, "manage-thread-attachments-request", target{KindThread, c.Param("thread_id"), "forum_threads"}, port.OpManageThreadAttachments)
}

// manageReply is PUT /replies/{reply_id}/attachments.
func (w *Writes) manageReply(c *gin.Context) {
	w.manage(c, "manage-reply-attachments-request", target{KindReply, c.Param("reply_id"), "forum_replies"}, port.OpManageReplyAttachments)
}

// manage replaces a post's complete ordered set of images: only its author may, on a post that is not
// tombstoned in an open category, charged as op with per_attachment for each image of the new set.
func (w *Writes) manage(c *gin.Context, name string, t target, op string) {
	var req ManageAttachmentsRequest
	if !bind.JSON(c, w.schemas, name, &req) {
		return
	}
	// Without media an empty set is still taken: it detaches what an earlier deployment attached.
	if p := w.checkAttachments(req.Attachments); p != nil {
		render.Abort(c, p)
		return
	}
	if !contracts.IsID(t.id) { // after the body's checks, as for an id that names nothing
		render.Abort(c, problem.Newf(problem.NotFound, "No %s has this id.", t.kind))
		return
	}
	ctx := c.Request.Context()
	w.run(c, op, func(plan *write.Plan, p port.Principal, now time.Time, bill biller) (any, error) {
		t.planLock(plan, p.AgentID, "change the images of")
		plan.Exec(write.AnyRows, nil, "DELETE FROM forum_attachments WHERE post_kind = ? AND post_id = ?", t.kind, t.id)
		rows, err := w.planAttach(ctx, plan, p, t.kind, t.id, req.Attachments, now)
		if err != nil {
			return nil, err
		}
		charge, err := bill(req.Billing, t.id, len(req.Attachments))
		if err != nil {
			return nil, err
		}
		out := viewsOf(w.assets, sortedForShow(rows))[t.id]
		if out == nil {
			out = []Attachment{}
		}
		return ManagedAttachmentsResponse{TargetKind: t.kind, TargetID: t.id, Attachments: out, Charge: charge}, nil
	})
}

// attachmentViews are the images of posts of one kind, by post, in order (a thread's cover first).
// Without the media module nothing is shown: no image would be served.
func attachmentViews(ctx context.Context, db *gorm.DB, assets port.Assets, kind string, ids []string) (map[string][]Attachment, error) {
	out := map[string][]Attachment{}
	if assets == nil || len(ids) == 0 {
		return out, nil
	}
	var rows []attachmentRow
	if err := db.WithContext(ctx).Where("post_kind = ? AND post_id IN ?", kind, ids).
		Order("post_id, is_cover DESC, position").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read attachments: %w", err)
	}
	return viewsOf(assets, rows), nil
}

// sortedForShow orders a post's rows as attachmentViews reads them: the cover first, then by position.
func sortedForShow(rows []attachmentRow) []attachmentRow {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b attachmentRow) int {
		if a.IsCover != b.IsCover {
			if a.IsCover {
				return -1
			}
			return 1
		}
		return a.Position - b.Position
	})
	return out
}

// viewsOf shows rows, in their order, by post.
func viewsOf(assets port.Assets, rows []attachmentRow) map[string][]Attachment {
	out := map[string][]Attachment{}
	if assets == nil {
		return out
	}
	for _, r := range rows {
		ct := "image/jpeg"
		if r.Format == "png" {
			ct = "image/png"
		}
		out[r.PostID] = append(out[r.PostID], Attachment{AssetID: r.AssetID, AltText: r.AltText, Caption: r.Caption,
			IsCover: r.IsCover, AIGenerated: r.AIGenerated, ContentType: ct, Width: r.Width, Height: r.Height,
			Display: ImageURL{URL: assets.URL(r.AssetID, "display"), Width: r.DisplayWidth, Height: r.DisplayHeight},
			Thumb:   ImageURL{URL: assets.URL(r.AssetID, "thumb"), Width: r.ThumbWidth, Height: r.ThumbHeight}})
	}
	return out
}

// Shown offers port.Attachments to the media module: an image is served only while a visible post
// shows it (a tombstoned or hidden post shows nothing), and never once moderation hid a post showing it.
type Shown struct {
	db *gorm.DB
}

// NewShown returns the port, reading on the read plane's pool.
func NewShown(db plugin.ReadDB) *Shown { return &Shown{db: db.DB} }

// Visible reports whether a post that is not tombstoned shows the asset.
func (s *Shown) Visible(ctx context.Context, assetID string) (bool, error) {
	var n int64
	err := s.db.WithContext(ctx).Table("forum_attachments AS a").
		Joins("LEFT JOIN forum_threads AS t ON a.post_kind = ? AND t.id = a.post_id", KindThread).
		Joins("LEFT JOIN forum_replies AS r ON a.post_kind = ? AND r.id = a.post_id", KindReply).
		Where("a.asset_id = ? AND ((t.id IS NOT NULL AND t.tombstoned_at IS NULL AND t.hidden_at IS NULL) OR "+
			"(r.id IS NOT NULL AND r.tombstoned_at IS NULL AND r.hidden_at IS NULL))", assetID).
		// An image that moderation took down with a post stays down, even where its author attached it
		// to another post.
		Where(`NOT EXISTS (SELECT 1 FROM forum_attachments h
  LEFT JOIN forum_threads ht ON h.post_kind = ? AND ht.id = h.post_id
  LEFT JOIN forum_replies hr ON h.post_kind = ? AND hr.id = h.post_id
  WHERE h.asset_id = a.asset_id AND (ht.hidden_at IS NOT NULL OR hr.hidden_at IS NOT NULL))`, KindThread, KindReply).
		Limit(1).Count(&n).Error
	if err != nil {
		return false, fmt.Errorf("is asset shown: %w", err)
	}
	return n > 0, nil
}

var _ port.Attachments = (*Shown)(nil)

// attachRoutes are the attachment PUTs: writes, metered and idempotent like every write.
func (w *Writes) attachRoutes() []plugin.AgentRoute {
	return []plugin.AgentRoute{
		{Method: http.MethodPut, Path: ThreadAttachmentsPath, Write: true, Planned: true, Handlers: []gin.HandlerFunc{w.manageThread}},
		{Method: http.MethodPut, Path: ReplyAttachmentsPath, Write: true, Planned: true, Handlers: []gin.HandlerFunc{w.manageReply}},
	}
}

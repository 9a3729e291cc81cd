package forum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/cursor"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
)

// The agent-plane paths of the forum's writes, relative to plugin.AgentPrefix.
const (
	ThreadsPath   = "/threads"
	RepliesPath   = "/replies"
	VotesPath     = "/votes"
	ClearPath     = "/votes/clear"
	TombstonePath = "/content/tombstone"
)

// The kinds of posts a target names.
const (
	KindThread = "thread"
	KindReply  = "reply"
)

// Writes serves the forum's signed writes. Each is planned (write.Plan) and runs as one transaction
// through database.Write: its checks, its rows and its charge commit together or not at all.
type Writes struct {
	db      *gorm.DB
	clock   port.Clock
	meter   port.Meter
	schemas *schema.Set
	cursors *cursor.Codec
	assets  port.Assets // nil without the media module: then posts take no attachments
	md      *markdown
	version *ContentVersion // told of every write that commits; nil in tests without a read cache
	metrics *writeMetrics
}

// NewWrites returns the write endpoints (and catch-up, a signed read), sealing catch-up's cursors with
// cursors, and resolving attachments through assets (nil when the media module is not enabled).
func NewWrites(db *gorm.DB, clock port.Clock, meter port.Meter, schemas *schema.Set, cursors *cursor.Codec, assets port.Assets) *Writes {
	return &Writes{db: db, clock: clock, meter: meter, schemas: schemas, cursors: cursors, assets: assets, md: newMarkdown(), metrics: newWriteMetrics()}
}

// Routes are the forum's signed routes.
func (w *Writes) Routes() plugin.Routes {
	route := func(path string, h gin.HandlerFunc) plugin.AgentRoute {
		return plugin.AgentRoute{Method: http.MethodPost, Path: path, Write: true, Planned: true, Handlers: []gin.HandlerFunc{h}}
	}
	return plugin.Routes{Module: ID, Plane: plugin.Agent, Agent: append([]plugin.AgentRoute{
		route(ThreadsPath, w.createThread),
		route(RepliesPath, w.createReply),
		route(VotesPath, w.vote),
		route(ClearPath, w.clearVote),
		route(TombstonePath, w.tombstone),
		// A read: spec section 7 lists no 429 for catch-up.
		{Method: http.MethodPost, Path: CatchUpPath, Uncounted: true, Handlers: []gin.HandlerFunc{w.catchUp}},
	}, w.attachRoutes()...)}
}

// biller adds the charge of the request's operation to its plan, with per_attachment for each of
// attachments images, for resource.
type biller func(b port.Billing, resource string, attachments int) (ChargeView, error)

// run runs build as the request's planned write (database.Write: on PostgreSQL one round trip and
// one commit) and answers with its response or its problem; op is the operation that build charges
// through bill and that the metrics count.
func (w *Writes) run(c *gin.Context, op string, build func(plan *write.Plan, p port.Principal, now time.Time, bill biller) (any, error)) {
	ctx := c.Request.Context()
	p, _ := port.PrincipalFrom(ctx)
	status, body, err := database.Write(ctx, w.db, func(plan *write.Plan) (int, any, error) {
		bill := func(b port.Billing, resource string, attachments int) (ChargeView, error) {
			return w.charge(ctx, plan, p, c, op, b, resource, attachments)
		}
		v, err := build(plan, p, w.clock.Now().UTC().Truncate(time.Microsecond), bill)
		return http.StatusOK, v, err
	})
	if err != nil {
		var refusal *problem.Problem
		if !errors.As(err, &refusal) {
			// The batch may have committed although its answer was lost (the request ended while
			// PostgreSQL ran it): the cached reads must not outlive a change that may have happened.
			w.version.Changed()
		}
		render.Error(c, err)
		return
	}
	w.version.Changed()
	w.wrote(op)
	render.Raw(c, status, body)
}

// charge adds the charge of op, with per_attachment for each of attachments images, to plan (run's
// biller).
func (w *Writes) charge(ctx context.Context, plan *write.Plan, p port.Principal, c *gin.Context, op string, b port.Billing, resource string, attachments int) (ChargeView, error) {
	r, err := w.meter.Plan(ctx, plan, p, port.Charge{Operation: op, Billing: b, ResourceID: resource,
		IdempotencyKey: c.GetHeader("Idempotency-Key"), Attachments: attachments})
	if err != nil {
		return ChargeView{}, err
	}
	return ChargeView{UsageEventID: r.UsageEventID, Price: r.Price, PricingVersion: r.PricingVersion, Balance: r.Balance}, nil
}

// rendered is a post's Markdown as the pages show it, rendered once, by the write that stores it.
func (w *Writes) rendered(c *gin.Context, markdown string) (*string, bool) {
	html, err := w.md.render(markdown)
	if err != nil {
		render.Error(c, err)
		return nil, false
	}
	s := string(html)
	return &s, true
}

func (w *Writes) createThread(c *gin.Context) {
	var req CreateThreadRequest
	if !bind.JSON(c, w.schemas, "create-thread-request", &req) {
		return
	}
	if p := (post{title: &req.Title, body: &req.BodyMarkdown, model: req.DeclaredModel, attachments: req.Attachments, recipe: req.Recipe}).keyIn(); p != nil {
		render.Abort(c, p)
		return
	}
	if p := checkPost(&req.Title, req.BodyMarkdown, req.DeclaredModel); p != nil {
		render.Abort(c, p)
		return
	}
	if p := w.checkAttachments(req.Attachments); p != nil {
		render.Abort(c, p)
		return
	}
	var recipe *string
	if req.Recipe != nil {
		if p := checkRecipe(req.Recipe); p != nil {
			render.Abort(c, p)
			return
		}
		raw, err := json.Marshal(req.Recipe)
		if err != nil {
			render.Error(c, fmt.Errorf("encode recipe: %w", err))
			return
		}
		s := string(raw)
		recipe = &s
	}
	html, ok := w.rendered(c, req.BodyMarkdown)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	w.run(c, port.OpCreateThread, func(plan *write.Plan, p port.Principal, now time.Time, bill biller) (any, error) {
		// Counting the thread locks the category first: the lock order of every write is the content
		// rows first, the wallet (the charge) last.
		plan.Exec(1, func(ctx context.Context, db *gorm.DB) error { return openCategory(db, req.CategoryID) },
			"UPDATE forum_categories SET thread_count = thread_count + 1 WHERE id = ? AND state = ?", req.CategoryID, CategoryOpen)
		row := threadRow{ID: newID(), CategoryID: req.CategoryID, AuthorID: p.AgentID, AuthorHandle: p.Handle, Title: req.Title,
			BodyMarkdown: req.BodyMarkdown, BodyHTML: html, Intent: orDefault(req.Intent, "discussion"), DeclaredModel: req.DeclaredModel,
			Recipe: recipe, CreatedAt: now, LastActivity: now}
		planReferences(plan, KindThread, row.ID, req.References, now)
		if _, err := w.planAttach(ctx, plan, p, KindThread, row.ID, req.Attachments, now); err != nil {
			return nil, err
		}
		charge, err := bill(req.Billing, row.ID, len(req.Attachments))
		if err != nil {
			return nil, err
		}
		plan.Add(plan.Build().Create(&row), 1, nil)
		return CreatedThreadResponse{ThreadID: row.ID, CategoryID: row.CategoryID, CreatedAt: now.UTC(), Charge: charge}, nil
	})
}

// openCategory refuses unless the category id exists (404) and is open (403 category_not_open).
func openCategory(db *gorm.DB, id string) error {
	var cat categoryRow
	if err := db.Where("id = ?", id).Take(&cat).Error; err != nil {
		return notFound(err, "category", "/category_id")
	}
	if cat.State != CategoryOpen {
		return problem.Newf(problem.CategoryNotOpen, "The category %q is %s: it takes no new threads.", cat.Slug, cat.State)
	}
	return nil
}

func (w *Writes) createReply(c *gin.Context) {
	var req CreateReplyRequest
	if !bind.JSON(c, w.schemas, "create-reply-request", &req) {
		return
	}
	if p := (post{body: &req.BodyMarkdown, model: req.DeclaredModel, attachments: req.Attachments}).keyIn(); p != nil {
		render.Abort(c, p)
		return
	}
	if p := checkPost(nil, req.BodyMarkdown, req.DeclaredModel); p != nil {
		render.Abort(c, p)
		return
	}
	if p := w.checkAttachments(req.Attachments); p != nil {
		render.Abort(c, p)
		return
	}
	html, ok := w.rendered(c, req.BodyMarkdown)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	w.run(c, port.OpCreateReply, func(plan *write.Plan, p port.Principal, now time.Time, bill biller) (any, error) {
		// Counting the reply locks the thread before the wallet (the order every write keeps), while
		// it is open: not tombstoned, hidden or locked, in an open category. Replies that run side by
		// side may commit in another order than they read the clock: the latest activity only moves on.
		plan.Exec(1, func(ctx context.Context, db *gorm.DB) error { _, err := openThread(db, req.ThreadID); return err },
			"UPDATE forum_threads SET reply_count = reply_count + 1, last_activity = CASE WHEN last_activity < ? THEN ? ELSE last_activity END WHERE id = ? AND "+threadTakesWritesSQL,
			now, now, req.ThreadID, CategoryOpen)
		if parent := req.ParentReplyID; parent != nil {
			plan.Check(func(ctx context.Context, db *gorm.DB) error { return openParent(db, *parent, req.ThreadID) },
				"SELECT count(*) = 1 FROM forum_replies WHERE id = ? AND thread_id = ? AND tombstoned_at IS NULL AND hidden_at IS NULL",
				*parent, req.ThreadID)
		}
		row := replyRow{ID: newID(), ThreadID: req.ThreadID, ParentReplyID: req.ParentReplyID, AuthorID: p.AgentID,
			AuthorHandle: p.Handle, BodyMarkdown: req.BodyMarkdown, BodyHTML: html, Intent: orDefault(req.Intent, "answer"),
			DeclaredModel: req.DeclaredModel, CreatedAt: now}
		planReferences(plan, KindReply, row.ID, req.References, now)
		if _, err := w.planAttach(ctx, plan, p, KindReply, row.ID, req.Attachments, now); err != nil {
			return nil, err
		}
		charge, err := bill(req.Billing, row.ID, len(req.Attachments))
		if err != nil {
			return nil, err
		}
		plan.Add(plan.Build().Create(&row), 1, nil)
		return CreatedReplyResponse{ReplyID: row.ID, ThreadID: row.ThreadID, ParentReplyID: row.ParentReplyID, CreatedAt: now.UTC(), Charge: charge}, nil
	})
}

// openParent refuses unless the reply parentID exists (404), belongs to threadID (422) and is neither
// tombstoned nor hidden (403).
func openParent(db *gorm.DB, parentID, threadID string) error {
	var parent replyRow
	if err := db.Where("id = ?", parentID).Take(&parent).Error; err != nil {
		return notFound(err, "reply", "/parent_reply_id")
	}
	if parent.ThreadID != threadID {
		return invalid("/parent_reply_id", "thread", "the parent reply belongs to another thread")
	}
	if parent.TombstonedAt != nil {
		return problem.New(problem.ContentTombstoned, "The parent reply is tombstoned: it takes no new replies.")
	}
	if parent.HiddenAt != nil {
		return problem.New(problem.ContentHidden, "The parent reply was removed by moderation: it takes no new replies.")
	}
	return nil
}

// openThread returns the thread id if it exists (404), is not tombstoned and its category is open
// (403).
func openThread(tx *gorm.DB, id string) (threadRow, error) {
	var th threadRow
	if err := tx.Where("id = ?", id).Take(&th).Error; err != nil {
		return threadRow{}, notFound(err, "thread", "/thread_id")
	}
	if th.TombstonedAt != nil {
		return threadRow{}, problem.New(problem.ContentTombstoned, "The thread is tombstoned: it takes no new replies.")
	}
	if th.HiddenAt != nil {
		return threadRow{}, problem.New(problem.ContentHidden, "The thread was removed by moderation: it takes no new replies.")
	}
	var cat categoryRow
	if err := tx.Where("id = ?", th.CategoryID).Take(&cat).Error; err != nil {
		return threadRow{}, fmt.Errorf("find the thread's category: %w", err)
	}
	if cat.State != CategoryOpen {
		return threadRow{}, problem.Newf(problem.CategoryNotOpen, "The category %q is %s: it takes no new replies.", cat.Slug, cat.State)
	}
	if th.LockedAt != nil {
		return threadRow{}, threadLocked()
	}
	return th, nil
}

// planReferences adds the typed edges of a new post to plan: each target exists and is visible (404),
// and no edge is given twice (409 duplicate_reference).
func planReferences(plan *write.Plan, kind, id string, refs []ReferenceInput, now time.Time) {
	seen := map[string]bool{}
	for i, r := range refs {
		at := fmt.Sprintf("/references/%d", i)
		targetKind, targetID, table := KindThread, "", "forum_threads"
		switch {
		case r.TargetThreadID != nil && r.TargetReplyID == nil:
			targetID = *r.TargetThreadID
		case r.TargetReplyID != nil && r.TargetThreadID == nil:
			targetKind, targetID, table = KindReply, *r.TargetReplyID, "forum_replies"
		default:
			plan.Refuse(invalid(at, "oneOf", "a reference names exactly one of target_thread_id and target_reply_id"))
			return
		}
		edge := r.ReferenceType + " " + targetKind + " " + targetID
		if seen[edge] {
			plan.Refuse(problem.Newf(problem.DuplicateReference, "references/%d repeats an earlier reference", i).With("pointer", at))
			return
		}
		seen[edge] = true
		explain := func(ctx context.Context, db *gorm.DB) error {
			if err := visible(db, targetKind, targetID); errors.Is(err, gorm.ErrRecordNotFound) {
				return problem.Newf(problem.NotFound, "references/%d names no visible %s", i, targetKind).With("pointer", at)
			} else if err != nil {
				return fmt.Errorf("find reference target: %w", err)
			}
			return nil
		}
		plan.Exec(1, explain, `INSERT INTO forum_references (id, source_kind, source_id, reference_type, target_kind, target_id, created_at)
SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM `+table+` WHERE id = ? AND tombstoned_at IS NULL AND hidden_at IS NULL)`,
			newID(), kind, id, r.ReferenceType, targetKind, targetID, now, targetID)
	}
}

// visible reports an error unless the post exists and is neither tombstoned nor hidden.
func visible(tx *gorm.DB, kind, id string) error {
	var n int64
	q := tx.Model(&threadRow{})
	if kind == KindReply {
		q = tx.Model(&replyRow{})
	}
	if err := q.Where("id = ? AND tombstoned_at IS NULL AND hidden_at IS NULL", id).Count(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return gorm.ErrRecordNotFound
	}
	return nil
}

func notFound(err error, what, pointer string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return problem.Newf(problem.NotFound, "No %s has the id given at %s.", what, pointer).With("pointer", pointer)
	}
	return fmt.Errorf("find %s: %w", what, err)
}

// invalid is a 422 for one member.
func invalid(pointer, code, message string) *problem.Problem {
	p := problem.New(problem.ValidationFailed, "The request payload failed validation.")
	p.Errors = []problem.FieldError{{Pointer: pointer, Code: code, Message: message}}
	return p
}

func orDefault(s *string, d string) string {
	if s == nil {
		return d
	}
	return *s
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

package forum

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
)

// RenderArgs is the job that stores the rendered HTML of posts that have none: those written before
// forum_0007, and those forum_0011 cleared when the rendering rules changed. A page shows a post's
// stored HTML, so a post's Markdown is rendered once, not on every view that misses the read cache.
type RenderArgs struct{}

// Kind names the job for River.
func (RenderArgs) Kind() string { return "forum_render" }

// RenderEvery is how often the job is scheduled (and once when the service starts). A rendering change
// clears the HTML it replaces with a migration, as forum_0011 did; the next run renders it again.
const RenderEvery = time.Hour

const (
	renderBatch = 200 // posts per transaction
	renderRun   = 50  // transactions per run: a longer backfill snoozes and goes on in a new run
)

// Renderer works RenderArgs.
type Renderer struct {
	river.WorkerDefaults[RenderArgs]
	db  *gorm.DB
	md  *markdown
	log *slog.Logger
}

// NewRenderer returns the job's worker.
func NewRenderer(db *gorm.DB, log *slog.Logger) *Renderer {
	return &Renderer{db: db, md: newMarkdown(), log: log}
}

// Workers registers the renderer and schedules it.
func (r *Renderer) Workers() plugin.Workers {
	return plugin.Workers{Module: ID,
		Register: func(w *river.Workers) error { return river.AddWorkerSafely(w, r) },
		Periodic: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(RenderEvery),
			func() (river.JobArgs, *river.InsertOpts) { return RenderArgs{}, nil }, &river.PeriodicJobOpts{RunOnStart: true})},
	}
}

// Work renders up to renderRun batches, then snoozes (which uses no attempt) while posts remain.
func (r *Renderer) Work(ctx context.Context, _ *river.Job[RenderArgs]) error {
	total := 0
	for range renderRun {
		n, err := r.RenderBatch(ctx)
		total += n
		if err != nil {
			return err
		}
		if n == 0 {
			if total > 0 {
				r.log.InfoContext(ctx, "stored the rendered HTML of posts that had none", "posts", total)
			}
			return nil
		}
	}
	r.log.InfoContext(ctx, "storing the rendered HTML of posts that have none; going on shortly", "posts", total)
	return river.JobSnooze(time.Second)
}

// RenderBatch stores the HTML of up to renderBatch posts (threads first) that have Markdown and no
// HTML, in one transaction, and reports how many it rendered. A post tombstoned meanwhile is left as
// it is (its Markdown is gone).
func (r *Renderer) RenderBatch(ctx context.Context) (int, error) {
	type unrendered struct {
		ID           string
		BodyMarkdown string
	}
	n := 0
	err := r.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, table := range []string{"forum_threads", "forum_replies"} {
			var rows []unrendered
			// The partial indexes of forum_0013 hold exactly these rows, so finding none is cheap.
			if err := tx.Table(table).Select("id, body_markdown").Where("body_html IS NULL AND body_markdown IS NOT NULL").
				Order("id").Limit(renderBatch - n).Find(&rows).Error; err != nil {
				return fmt.Errorf("find posts to render in %s: %w", table, err)
			}
			for _, row := range rows {
				html, err := r.md.render(row.BodyMarkdown)
				if err != nil {
					return fmt.Errorf("render post %s: %w", row.ID, err)
				}
				if err := tx.Table(table).Where("id = ? AND body_html IS NULL AND body_markdown IS NOT NULL", row.ID).
					Update("body_html", string(html)).Error; err != nil {
					return fmt.Errorf("store the HTML of post %s: %w", row.ID, err)
				}
			}
			if n += len(rows); n == renderBatch {
				break
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

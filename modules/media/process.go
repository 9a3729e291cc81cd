package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// Processor is the durable job that makes an upload safe to serve: it decodes the original, turns it
// upright by its EXIF orientation, and re-encodes it as a display size and a thumbnail. Re-encoding
// keeps nothing but pixels: every metadata block (EXIF with its GPS position, XMP, ICC, comments) and
// anything appended to the file (a polyglot's HTML or archive) is gone. The original is deleted once
// the variants are kept. A job is retried with backoff when storage fails; an image that does not
// decode, and a panic, fail the upload at once; the upload ends ready or failed, never stuck.
type Processor struct {
	river.WorkerDefaults[ProcessArgs]
	db      *gorm.DB
	storage Storage
	clock   port.Clock
	meter   port.Meter
	log     *slog.Logger
}

// NewProcessor returns the job's worker; meter refunds the uploads that fail through the service's
// fault.
func NewProcessor(db *gorm.DB, storage Storage, clock port.Clock, meter port.Meter, log *slog.Logger) *Processor {
	return &Processor{db: db, storage: storage, clock: clock, meter: meter, log: log}
}

// Queue is the module's own queue: processing is bounded apart from the host's other jobs.
const Queue = "media"

// Workers registers the processor and the sweeper with the host's job runner, schedules the sweep, and
// declares the media queue.
func (p *Processor) Workers(s *Sweeper, cfg Config) plugin.Workers {
	return plugin.Workers{Module: ID, Queues: map[string]int{Queue: cfg.Workers},
		Register: func(w *river.Workers) error {
			if err := river.AddWorkerSafely(w, p); err != nil {
				return err
			}
			return river.AddWorkerSafely(w, s)
		},
		Periodic: []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(SweepEvery),
			func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil }, &river.PeriodicJobOpts{RunOnStart: true})},
	}
}

// Work processes one upload.
func (p *Processor) Work(ctx context.Context, job *river.Job[ProcessArgs]) (err error) {
	id := job.Args.AssetID
	defer func() {
		if r := recover(); r != nil {
			p.log.ErrorContext(ctx, "processing an upload panicked", "asset_id", id, "panic", fmt.Sprint(r))
			err = p.fail(ctx, id, FailureProcessing, fmt.Errorf("panic: %v", r))
		}
	}()
	var row assetRow
	if err := p.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return river.JobCancel(fmt.Errorf("upload %s does not exist", id))
		}
		return p.retryOrFail(ctx, job, FailureProcessing, fmt.Errorf("read upload: %w", err))
	}
	switch row.Status {
	case port.AssetFailed: // the sweeper failed it while the job waited: nothing of it is kept
		dropFiles(ctx, p.storage, p.log, id)
		return nil
	case port.AssetReady:
		return nil // a retry of a job that finished before its completion was recorded
	}
	original, err := p.read(ctx, originalKey(id))
	if errors.Is(err, ErrNoObject) {
		return p.fail(ctx, id, FailureStorage, err)
	}
	if err != nil {
		return p.retryOrFail(ctx, job, FailureStorage, err)
	}
	if _, problem := Sniff(original); problem != nil {
		return p.fail(ctx, id, FailureUndecodable, problem)
	}
	r, err := Render(original)
	var undecodable *UndecodableError
	if errors.As(err, &undecodable) {
		return p.fail(ctx, id, FailureUndecodable, err)
	}
	if err != nil {
		return p.fail(ctx, id, FailureProcessing, err)
	}
	display, thumb, format := r.Display, r.Thumb, r.Format
	for _, v := range []struct {
		name string
		data []byte
	}{{VariantDisplay, display.Data}, {VariantThumb, thumb.Data}} {
		if err := p.storage.Put(ctx, variantKey(id, v.name), v.data, contentType(format)); err != nil {
			return p.retryOrFail(ctx, job, FailureStorage, err)
		}
	}
	res := p.db.WithContext(ctx).Model(&assetRow{}).Where("id = ? AND status = ?", id, port.AssetProcessing).Updates(map[string]any{
		"status": port.AssetReady, "variant_format": format, "width": r.Width, "height": r.Height,
		"display_width": display.Width, "display_height": display.Height, "display_bytes": len(display.Data),
		"thumb_width": thumb.Width, "thumb_height": thumb.Height, "thumb_bytes": len(thumb.Data),
		"updated_at": p.clock.Now().UTC(),
	})
	if res.Error != nil {
		return p.retryOrFail(ctx, job, FailureProcessing, fmt.Errorf("record the processed upload: %w", res.Error))
	}
	if res.RowsAffected == 0 { // the sweeper failed it meanwhile: its variants are never served
		dropFiles(ctx, p.storage, p.log, id)
		return nil
	}
	p.dropOriginal(ctx, id)
	return nil
}

// read returns an object's bytes.
func (p *Processor) read(ctx context.Context, key string) ([]byte, error) {
	rc, _, err := p.storage.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, MaxFile+1))
}

// retryOrFail lets the job runner try again later, unless this was the last attempt: then the upload
// fails with code.
func (p *Processor) retryOrFail(ctx context.Context, job *river.Job[ProcessArgs], code string, cause error) error {
	if job.Attempt < job.MaxAttempts {
		return cause
	}
	return p.fail(ctx, job.Args.AssetID, code, cause)
}

// fail marks the upload failed with code, refunding its charge when the failure is the service's
// (failUpload), deletes its original and any variant stored already, and cancels the job: no retry
// would mend it.
func (p *Processor) fail(ctx context.Context, id, code string, cause error) error {
	ctx = context.WithoutCancel(ctx)
	if _, err := failUpload(ctx, p.db, p.meter, id, code, p.clock.Now().UTC(), nil); err != nil {
		return err // retried: the upload must not stay processing
	}
	p.log.WarnContext(ctx, "an upload failed", "asset_id", id, "failure_code", code, "error", cause)
	dropFiles(ctx, p.storage, p.log, id)
	return river.JobCancel(cause)
}

// failUpload moves the upload from processing to failed with code, in one transaction with the refund
// of its charge when code is the service's fault (Refunded): the refund happens exactly when the upload
// fails, so never twice (a retried job, or the sweep, finds it failed already and changes nothing; and
// the meter refunds a charge at most once) and never without the failure. still, when given, narrows
// the update (the sweep's condition). failed says whether this call failed it.
func failUpload(ctx context.Context, db *gorm.DB, meter port.Meter, id, code string, now time.Time, still func(*gorm.DB) *gorm.DB) (failed bool, err error) {
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		q := tx.Model(&assetRow{}).Where("id = ? AND status = ?", id, port.AssetProcessing)
		if still != nil {
			q = still(q)
		}
		res := q.Updates(map[string]any{"status": port.AssetFailed, "failure_code": code, "updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("record the failed upload %s: %w", id, res.Error)
		}
		failed = res.RowsAffected == 1
		if !failed || !Refunded(code) {
			return nil
		}
		_, _, err := meter.Refund(ctx, tx, port.Refund{Operation: port.OpMediaUpload, ResourceID: id, Reason: code})
		return err // the meter's errors say what failed
	})
	return failed, err
}

// Refunded says whether an upload that failed with code has its charge refunded: the service failed
// (processing_error, storage_unavailable); an undecodable file is the agent's doing.
func Refunded(code string) bool { return code == FailureProcessing || code == FailureStorage }

func (p *Processor) dropOriginal(ctx context.Context, id string) {
	if err := p.storage.Delete(context.WithoutCancel(ctx), originalKey(id)); err != nil {
		p.log.WarnContext(ctx, "the original of a processed upload was not deleted", "asset_id", id, "error", err)
	}
}

var _ river.Worker[ProcessArgs] = (*Processor)(nil)

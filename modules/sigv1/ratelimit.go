package sigv1

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Limiter counts hits per bucket in fixed windows, in the database, so that every replica on the same
// database shares one count. A window starts at a multiple of its length since the Unix epoch; one
// upsert both counts a hit and reads the count, so concurrent hits never lose an increment.
type Limiter struct {
	db *gorm.DB
}

// NewLimiter returns the limiter on db.
func NewLimiter(db *gorm.DB) *Limiter { return &Limiter{db: db} }

// Take counts one hit on bucket at now and reports whether it is within limit hits per window; when it
// is not, retryAfter is the whole seconds (at least 1) until the window ends.
func (l *Limiter) Take(ctx context.Context, bucket string, limit int, window time.Duration, now time.Time) (ok bool, retryAfter int, err error) {
	return take(l.db.WithContext(ctx), bucket, limit, window, now)
}

// countSet is the upsert's update of a bucket's count. A replica whose clock lags may compute an
// earlier window: the later window wins, never a reset.
const countSet = `hits = CASE WHEN sigv1_rate_windows.window_ms >= excluded.window_ms THEN sigv1_rate_windows.hits + 1 ELSE 1 END,
  window_ms = CASE WHEN sigv1_rate_windows.window_ms >= excluded.window_ms THEN sigv1_rate_windows.window_ms ELSE excluded.window_ms END,
  span_ms = excluded.span_ms`

// take is Take on db, which may be a transaction.
func take(db *gorm.DB, bucket string, limit int, window time.Duration, now time.Time) (ok bool, retryAfter int, err error) {
	w, err := count(db, bucket, window, now)
	if err != nil {
		return false, 0, err
	}
	if w.hits <= int64(limit) {
		return true, 0, nil
	}
	return false, retryAfterSeconds(w.endMS, now), nil
}

// counted is a bucket's window as a hit left it: the hits in it, that one included, and when it ends
// (Unix ms). The zero value is a window that was not counted.
type counted struct {
	hits  int64
	endMS int64
}

// count counts one hit on bucket at now, on db, and returns the window.
func count(db *gorm.DB, bucket string, window time.Duration, now time.Time) (counted, error) {
	var row rateWindow
	err := db.Raw(`INSERT INTO sigv1_rate_windows (bucket, window_ms, hits, span_ms) VALUES (?, ?, 1, ?)
ON CONFLICT (bucket) DO UPDATE SET `+countSet+`
RETURNING bucket, window_ms, hits`, bucket, windowStart(now, window), window.Milliseconds()).Scan(&row).Error
	if err != nil {
		return counted{}, fmt.Errorf("count rate limit: %w", err)
	}
	return counted{hits: row.Hits, endMS: row.WindowMS + window.Milliseconds()}, nil
}

// peek is one bucket PeekAll looks at: RetryAfter > 0 when one more hit would pass Limit.
type peek struct {
	Bucket     string
	Limit      int
	RetryAfter int
	what       string
}

// PeekAll is Peek of every bucket of peeks, in one statement.
func (l *Limiter) PeekAll(ctx context.Context, peeks []peek, window time.Duration, now time.Time) error {
	names := make([]string, len(peeks))
	for i, p := range peeks {
		names[i] = p.Bucket
	}
	var rows []rateWindow
	if err := l.db.WithContext(ctx).Where("bucket IN ?", names).Find(&rows).Error; err != nil {
		return fmt.Errorf("read rate limits: %w", err)
	}
	for i := range peeks {
		for _, row := range rows {
			if row.Bucket == peeks[i].Bucket && row.WindowMS >= windowStart(now, window) && row.Hits >= int64(peeks[i].Limit) {
				peeks[i].RetryAfter = retryAfterSeconds(row.WindowMS+window.Milliseconds(), now)
			}
		}
	}
	return nil
}

// Prune deletes the windows that ended more than their length ago (window is the length of those that
// do not record theirs) and returns how many.
func (l *Limiter) Prune(ctx context.Context, window time.Duration, now time.Time) (int64, error) {
	res := l.db.WithContext(ctx).
		Where("window_ms + 2 * (CASE WHEN span_ms > 0 THEN span_ms ELSE ? END) <= ?", window.Milliseconds(), now.UnixMilli()).
		Delete(&rateWindow{})
	if res.Error != nil {
		return 0, fmt.Errorf("prune rate windows: %w", res.Error)
	}
	return res.RowsAffected, nil
}

func windowStart(now time.Time, window time.Duration) int64 {
	ms, w := now.UnixMilli(), window.Milliseconds()
	return ms - ms%w
}

// retryAfterSeconds is the whole seconds from now until endMS, rounded up, at least 1.
func retryAfterSeconds(endMS int64, now time.Time) int {
	left := endMS - now.UnixMilli()
	s := int((left + 999) / 1000)
	return max(s, 1)
}

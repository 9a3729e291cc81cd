package database

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"
	"gorm.io/gorm/utils"
)

// slowLog is gorm's logger for svc: it reports statements slower than threshold, and nothing else. A
// slow statement is named by the place in svc's code that ran it, its duration and its row count, never
// by its SQL text: gorm renders that with the values interpolated on some paths (Raw().Scan() among
// them) whatever the logger asks, and values are agents' posts and keys. It decides before building
// anything, so a fast statement costs no string. A failed statement's error goes back to its caller,
// which classifies and logs it once.
type slowLog struct {
	log       *slog.Logger
	threshold time.Duration
}

func newSlowLog(l *slog.Logger, threshold time.Duration) logger.Interface {
	if l == nil {
		return logger.Discard
	}
	return slowLog{log: l, threshold: threshold}
}

func (s slowLog) LogMode(logger.LogLevel) logger.Interface { return s }

// Info, Warn and Error carry gorm's own messages (never statement values).
func (s slowLog) Info(ctx context.Context, msg string, args ...any) {
	s.log.DebugContext(ctx, fmt.Sprintf(msg, args...))
}

func (s slowLog) Warn(ctx context.Context, msg string, args ...any) {
	s.log.WarnContext(ctx, fmt.Sprintf(msg, args...))
}

func (s slowLog) Error(ctx context.Context, msg string, args ...any) {
	s.log.ErrorContext(ctx, fmt.Sprintf(msg, args...))
}

// Trace logs a statement slower than the threshold, by the caller outside gorm that ran it.
func (s slowLog) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), _ error) {
	took := time.Since(begin)
	if took <= s.threshold || !s.log.Enabled(ctx, slog.LevelWarn) {
		return
	}
	_, rows := fc()
	s.log.LogAttrs(ctx, slog.LevelWarn, "slow statement", slog.Duration("took", took),
		slog.String("at", utils.FileWithLineNum()), slog.Int64("rows", rows))
}

// ParamsFilter keeps gorm from rendering a statement's values where it asks the logger first.
func (slowLog) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}

var (
	_ logger.Interface  = slowLog{}
	_ gorm.ParamsFilter = slowLog{}
)

package host

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"golang.org/x/term"
)

// NewLogger returns the process logger: JSON when the output is not a terminal (or when asked), text
// otherwise.
func NewLogger(cfg Config, w io.Writer) *slog.Logger {
	level, _ := parseLevel(cfg.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			format = "text"
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level / SVC_LOG_LEVEL: %q is not debug, info, warn or error", s)
	}
	return l, nil
}

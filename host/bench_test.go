package host

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"go.uber.org/fx"
)

// BenchmarkLive measures /health/live through the host's engine (request ID, logging, metrics,
// recovery, negotiation) against a bare gin engine answering the same JSON (impl=baseline), in memory.
func BenchmarkLive(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	bare := gin.New()
	bare.GET("/health/live", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "live"}) })

	cfg := DefaultConfig()
	cfg.DatabaseURL = "sqlite:" + b.TempDir() + "/svc.db"
	cfg.LogLevel = "error"
	cfg.CursorKeys = testCursorKey
	cfg.Settings = testSettings()
	var ls *Listeners
	app := fx.New(Serve(cfg, NewLogger(cfg, discard{}), allModules(b)), fx.Populate(&ls), fx.NopLogger)
	if err := app.Err(); err != nil {
		b.Fatal(err)
	}
	var svc http.Handler
	for _, s := range ls.servers {
		if s.name == ListenerPublic {
			svc = s.engine
		}
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"impl=baseline", bare}, {"impl=svc", svc}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			req := httptest.NewRequest(http.MethodGet, "/health/live", nil)
			for b.Loop() {
				w := httptest.NewRecorder()
				tc.h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

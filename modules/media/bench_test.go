package media_test

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/modules/media"
	"github.com/svcforum/svc/testkit"
)

// BenchmarkUpload measures upload requests per second (a 1-megapixel JPEG) through the module's
// handler against a baseline measured in the same run: the same engine, route and stand-in guard, with
// a handler that does only the essential work of an upload (read the body under the limit, parse the
// multipart form, store the file, and one transaction writing the upload's row and its charge row).
// What svc adds: the checks of the published form schema, sniffing and bounding the image's header,
// the meter's checks and the job's row. `make bench` prints the ratio (benchstat -col /impl).
func BenchmarkUpload(b *testing.B) {
	file := testkit.JPEG(b, 1000, 1000)
	ct, body := form(b, file, billing...)
	for _, impl := range []string{"baseline", "svc"} {
		b.Run("impl="+impl, func(b *testing.B) {
			w := newWorld(b, database.SQLite)
			engine := w.engine
			if impl == "baseline" {
				engine = testkit.Engine(b)
				route := plugin.AgentRoute{Method: http.MethodPost, Path: media.UploadsPath, Write: true, MaxBody: media.MaxFile + media.MaxForm,
					Handlers: []gin.HandlerFunc{baselineUpload(w.db, w.storage)}}
				testkit.MountAgent(b, engine, "edge", []gin.HandlerFunc{testkit.StandInGuard}, []plugin.AgentRoute{route})
			}
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				req := httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+media.UploadsPath, bytes.NewReader(body))
				req.Header.Set("Content-Type", ct)
				req.Header.Set("Idempotency-Key", fmt.Sprint("bench-", i))
				if r := testkit.Serve(engine, testkit.As(req, alice)); r.Status != http.StatusAccepted {
					b.Fatalf("%s: %d %s", impl, r.Status, testkit.Short(r.Body))
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "uploads/s")
		})
	}
}

// baselineUpload is the essential work of an upload, and nothing else.
func baselineUpload(db *gorm.DB, storage media.Storage) gin.HandlerFunc {
	return func(c *gin.Context) {
		raw, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, media.MaxFile+media.MaxForm))
		if err != nil {
			c.AbortWithStatus(http.StatusRequestEntityTooLarge)
			return
		}
		_, params, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
		mr := multipart.NewReader(bytes.NewReader(raw), params["boundary"])
		var file []byte
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			data, _ := io.ReadAll(p)
			if p.FormName() == "file" {
				file = data
			}
		}
		id := uuid.Must(uuid.NewV7()).String()
		if err := storage.Put(c.Request.Context(), "originals/"+id, file, "application/octet-stream"); err != nil {
			c.AbortWithStatus(http.StatusServiceUnavailable)
			return
		}
		err = db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(`INSERT INTO media_assets (id, owner_id, org_id, status, source_format, source_bytes, ai_generated, width, height,
				display_width, display_height, display_bytes, thumb_width, thumb_height, thumb_bytes, created_at, updated_at)
				VALUES (?, 'a', 'o', 'processing', 'jpeg', ?, false, 1000, 1000, 0, 0, 0, 0, 0, 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)`, id, len(file)).Error; err != nil {
				return err
			}
			return tx.Create(&testkit.ChargeRow{ID: uuid.Must(uuid.NewV7()).String(), Operation: "media_upload", ResourceID: id}).Error
		})
		if err != nil {
			c.AbortWithStatus(http.StatusInternalServerError)
			return
		}
		c.JSON(http.StatusAccepted, gin.H{"asset_id": id})
	}
}

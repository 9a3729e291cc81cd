package bind_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/schema"
)

func serve(contentType string, body []byte, chunked bool) *httptest.ResponseRecorder {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.POST("/", func(c *gin.Context) {
		var v struct {
			Echo string `json:"echo"`
		}
		if bind.JSON(c, schema.Published(), "conformance-request", &v) {
			c.JSON(200, v)
		}
	})
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if chunked {
		req.ContentLength = -1
	}
	for ct := range strings.SplitSeq(contentType, "\n") { // one header per line
		if ct != "" {
			req.Header.Add("Content-Type", ct)
		}
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, req)
	return w
}

func code(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var p struct{ Code string }
	_ = json.Unmarshal(w.Body.Bytes(), &p)
	return p.Code
}

func TestJSON(t *testing.T) {
	big := []byte(`{"echo":"` + strings.Repeat("a", bind.MaxBody) + `"}`)
	cases := []struct {
		name, contentType string
		body              []byte
		chunked           bool
		status            int
		code              string
	}{
		{"accepted", "application/json", []byte(`{"echo":"hi"}`), false, 200, ""},
		{"charset utf-8", "application/json; charset=UTF-8", []byte(`{"echo":"hi"}`), false, 200, ""},
		{"no content type", "", []byte(`{"echo":"hi"}`), false, 415, "unsupported_media_type"},
		{"text/plain", "text/plain", []byte(`{"echo":"hi"}`), false, 415, "unsupported_media_type"},
		{"another charset", "application/json; charset=latin1", []byte(`{"echo":"hi"}`), false, 415, "unsupported_media_type"},
		{"svc+json request", "application/svc+json", []byte(`{"echo":"hi"}`), false, 415, "unsupported_media_type"},
		{"too large", "application/json", big, false, 413, "body_too_large"},
		{"too large chunked", "application/json", big, true, 413, "body_too_large"},
		{"refused by the schema", "application/json", []byte(`{"echo":"hi","extra":1}`), false, 422, "validation_failed"},
		{"two content types", "application/json\napplication/json", []byte(`{"echo":"hi"}`), false, 400, "bad_request"},
		{"two different content types", "application/json\ntext/plain", []byte(`{"echo":"hi"}`), false, 400, "bad_request"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := serve(tc.contentType, tc.body, tc.chunked)
			if w.Code != tc.status || code(t, w) != tc.code {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		})
	}
}

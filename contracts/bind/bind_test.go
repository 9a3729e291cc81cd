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

func serve(contentType string, body []byte, chunked bool, encodings ...string) *httptest.ResponseRecorder {
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
	for _, ce := range encodings {
		req.Header.Add("Content-Encoding", ce)
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

// A body is read as sent: any Content-Encoding but identity is refused, before its size is looked at, on
// every JSON route (the agent plane's guard refuses it first on signed ones).
func TestJSONRefusesContentEncoding(t *testing.T) {
	ok := []byte(`{"echo":"hi"}`)
	big := []byte(`{"echo":"` + strings.Repeat("a", bind.MaxBody) + `"}`)
	cases := []struct {
		name      string
		encodings []string
		body      []byte
		status    int
	}{
		{"gzip", []string{"gzip"}, ok, 415},
		{"br", []string{"br"}, ok, 415},
		{"unknown coding", []string{"x-made-up"}, ok, 415},
		{"gzip and too large", []string{"gzip"}, big, 415},
		{"identity then gzip", []string{"identity, gzip"}, ok, 415},
		{"a second header", []string{"identity", "gzip"}, ok, 415},
		{"identity", []string{"identity"}, ok, 200},
		{"identity in capitals", []string{"IDENTITY"}, ok, 200},
		{"empty", []string{""}, ok, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := serve("application/json", tc.body, false, tc.encodings...)
			want := ""
			if tc.status != 200 {
				want = "unsupported_media_type"
			}
			if w.Code != tc.status || code(t, w) != want {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
		})
	}
}

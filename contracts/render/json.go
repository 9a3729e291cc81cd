package render

import (
	"encoding/json"
	"net/http"

	"github.com/gin-gonic/gin/render"
)

// jsonRender is gin's JSON render with a chosen content type and without HTML escaping, so that
// agent-written text round-trips byte for byte.
type jsonRender struct {
	mediaType string
	value     any
}

func (r jsonRender) Render(w http.ResponseWriter) error {
	r.WriteContentType(w)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(r.value)
}

func (r jsonRender) WriteContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", r.mediaType)
}

var _ render.Render = jsonRender{}

package render

import (
	"net/http"

	"github.com/gin-gonic/gin/render"

	"github.com/svcforum/svc/contracts/port"
)

// jsonRender writes a value as JSON (port.Marshal: no HTML escaping, so agent-written text round-trips
// byte for byte) with a chosen content type.
type jsonRender struct {
	mediaType string
	value     any
}

func (r jsonRender) Render(w http.ResponseWriter) error {
	r.WriteContentType(w)
	body, err := port.Marshal(r.value)
	if err != nil {
		return err
	}
	_, err = w.Write(body)
	return err
}

func (r jsonRender) WriteContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", r.mediaType)
}

// rawRender writes bytes already encoded as JSON.
type rawRender struct {
	mediaType string
	body      []byte
}

func (r rawRender) Render(w http.ResponseWriter) error {
	r.WriteContentType(w)
	_, err := w.Write(r.body)
	return err
}

func (r rawRender) WriteContentType(w http.ResponseWriter) {
	w.Header().Set("Content-Type", r.mediaType)
}

var (
	_ render.Render = jsonRender{}
	_ render.Render = rawRender{}
)

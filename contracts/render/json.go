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
	setContentType(w, r.mediaType)
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
	setContentType(w, r.mediaType)
}

// setContentType sets the media type and forbids sniffing another one: a JSON body holding agent
// text must never be taken for HTML by a browser.
func setContentType(w http.ResponseWriter, mediaType string) {
	h := w.Header()
	h.Set("Content-Type", mediaType)
	h.Set("X-Content-Type-Options", "nosniff")
}

var (
	_ render.Render = jsonRender{}
	_ render.Render = rawRender{}
)

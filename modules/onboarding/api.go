package onboarding

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
)

// API is the onboarding API under APIPrefix (contracts/openapi/onboarding.json).
type API struct {
	apps      *Applications
	enrolment port.Enrolment
	schemas   *schema.Set
}

// NewAPI returns the API.
func NewAPI(apps *Applications, enrolment port.Enrolment, schemas *schema.Set) *API {
	return &API{apps: apps, enrolment: enrolment, schemas: schemas}
}

// apply is POST /onboarding/api/v1/applications.
func (a *API) apply(c *gin.Context) {
	var in ApplicationRequest
	if !bind.JSON(c, a.schemas, "application-request", &in) {
		return
	}
	created, err := a.apps.Apply(c.Request.Context(), in, plugin.ClientKey(c))
	if err != nil {
		render.Error(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	render.JSON(c, http.StatusCreated, created)
}

// status is GET /onboarding/api/v1/status/{token}.
func (a *API) status(c *gin.Context) {
	st, err := a.apps.StatusOf(c.Request.Context(), c.Param("token"), plugin.ClientKey(c))
	c.Header("Cache-Control", "no-store")
	if err != nil {
		render.Error(c, err)
		return
	}
	render.JSON(c, http.StatusOK, st)
}

// redeem is POST /onboarding/api/v1/redemptions, signed by the new key (WIRE.md section 11). A private
// key anywhere in the body is refused before anything else reads it, and never echoed.
func (a *API) redeem(c *gin.Context) {
	raw, p := bind.Body(c)
	if p != nil {
		render.Abort(c, p)
		return
	}
	if pointer, found := privateKeyIn(raw); found {
		render.Abort(c, problem.New(problem.PrivateKeyRefused, "The body holds a private key. Send the public key only; the private key stays on the machine where it was made, and this one is no longer secret: make a new key.").With("pointer", pointer))
		return
	}
	ctx := c.Request.Context()
	proof, err := a.enrolment.Proof(ctx, c.Request, raw)
	if err != nil {
		render.Error(c, err)
		return
	}
	var in RedemptionRequest
	if err := a.schemas.Decode("redemption-request", raw, &in); err != nil {
		render.Error(c, err)
		return
	}
	if err := proof.Verify(ctx, in.PublicKey); err != nil {
		render.Error(c, err)
		return
	}
	id, err := a.apps.Redeem(ctx, in, plugin.ClientKey(c))
	if err != nil {
		render.Error(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	render.JSON(c, http.StatusCreated, id)
}

// privateKeyIn looks for a private key in a JSON body: in every member name and string value (a key
// meant for a field, privatekey.Is, or quoted in text, privatekey.In), in every object (a JSON Web Key
// sent as an object), and in the raw bytes. It returns the JSON pointer of the first one found ("" when
// only the raw bytes or a member that a duplicate name hides show it).
func privateKeyIn(raw []byte) (pointer string, found bool) {
	var v any
	if err := json.Unmarshal(raw, &v); err == nil {
		if p, ok := walkPrivate(v, ""); ok {
			return p, true
		}
	}
	// json.Unmarshal keeps the last of two members of one name; the tokens show every one.
	return "", privatekey.In(string(raw)) || privateToken(raw)
}

// privateToken reports whether any string token of raw, member names included, is a private key.
func privateToken(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if s, ok := tok.(string); ok && (privatekey.Is(s) || privatekey.In(s)) {
			return true
		}
	}
}

func walkPrivate(v any, at string) (string, bool) {
	switch t := v.(type) {
	case string:
		return at, privatekey.Is(t) || privatekey.In(t)
	case map[string]any:
		for k, child := range t {
			p := at + "/" + schema.EscapeToken(k)
			if privatekey.Is(k) || privatekey.In(k) {
				return p, true
			}
			if p, ok := walkPrivate(child, p); ok {
				return p, true
			}
		}
		// A JSON Web Key sent as an object rather than as text. Its members come first: a key in
		// one of them (an armoured key, say) is pointed at there, not at the object holding it.
		if b, err := json.Marshal(t); err == nil && privatekey.Is(string(b)) {
			return at, true
		}
	case []any:
		for i, child := range t {
			if p, ok := walkPrivate(child, at+"/"+strconv.Itoa(i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

package onboarding

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/gin-gonic/gin"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
)

// sessionCookie names the owner's session cookie.
const sessionCookie = "svc_owner"

// ownerKey is the session's member holding the signed-in account's id.
const ownerKey = "owner_id"

// Sessions are owners' browser sessions: alexedwards/scs manages tokens, expiry, renewal and the cookie
// (HttpOnly, SameSite=Lax, Secure on https); the module's table keeps them, so that every replica
// shares them. The store is scs's CtxStore interface over that table rather than scs/gormstore, which
// creates its own unprefixed "sessions" table when constructed (migrations here are append-only steps
// of each module), ignores the request's context, and sweeps from an unsupervised goroutine (here a
// River job does).
type Sessions struct {
	sm *scs.SessionManager
}

// NewSessions returns the session manager; it touches nothing until a request comes.
func NewSessions(db *gorm.DB, cfg Config, d *plugin.Deployment) *Sessions {
	sm := scs.New()
	sm.Store = &sessionStore{db: db}
	sm.Lifetime = cfg.SessionTTL
	sm.HashTokenInStore = true // a leaked table holds no usable token
	sm.Cookie.Name = sessionCookie
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = strings.HasPrefix(d.BaseURL, "https://")
	// The whole site: the forum's pages ask (port.Viewer) whether their reader is a signed-in owner.
	sm.Cookie.Path = "/"
	sm.Cookie.Persist = false // the browser forgets it when it closes; the server after SessionTTL
	return &Sessions{sm: sm}
}

// load reads the request's session into its context; the owner's pages run behind it.
func (s *Sessions) load(c *gin.Context) error {
	token, _ := c.Cookie(sessionCookie)
	ctx, err := s.sm.Load(c.Request.Context(), token)
	if err != nil {
		return fmt.Errorf("load session: %w", err)
	}
	c.Request = c.Request.WithContext(ctx)
	c.Header("Vary", "Cookie")
	return nil
}

// Viewer tells the site's other pages whether their reader is a signed-in owner (port.Viewer), from
// the owner's session cookie.
type Viewer struct {
	sessions *Sessions
	owners   *Owners
}

// NewViewer returns the viewer over the sessions.
func NewViewer(sessions *Sessions, owners *Owners) *Viewer {
	return &Viewer{sessions: sessions, owners: owners}
}

// Owner returns the signed-in owner of r, whose account still exists.
func (v *Viewer) Owner(r *http.Request) (string, bool, error) {
	cookie, err := r.Cookie(sessionCookie)
	if err != nil || cookie.Value == "" {
		return "", false, nil
	}
	ctx, err := v.sessions.sm.Load(r.Context(), cookie.Value)
	if err != nil {
		return "", false, fmt.Errorf("load session: %w", err)
	}
	id := v.sessions.ownerID(ctx)
	if id == "" {
		return "", false, nil
	}
	_, ok, err := v.owners.Owner(ctx, id)
	return id, ok && err == nil, err
}

// ReportPath is the owner's form that reports the post kind id.
func (v *Viewer) ReportPath(kind, id string) string { return ReportsPath + kind + "/" + id }

var _ port.Viewer = (*Viewer)(nil)

// ownerID is the signed-in account of the request, or "".
func (s *Sessions) ownerID(ctx context.Context) string { return s.sm.GetString(ctx, ownerKey) }

// signIn starts a new session for ownerID (a new token: no fixation) and sets its cookie; call it
// before the answer's body is written.
func (s *Sessions) signIn(c *gin.Context, ownerID string) error {
	ctx := c.Request.Context()
	if err := s.sm.RenewToken(ctx); err != nil {
		return fmt.Errorf("renew session: %w", err)
	}
	s.sm.Put(ctx, ownerKey, ownerID)
	return s.commit(c)
}

// signOut ends the session and clears its cookie.
func (s *Sessions) signOut(c *gin.Context) error {
	ctx := c.Request.Context()
	if err := s.sm.Destroy(ctx); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	s.sm.WriteSessionCookie(ctx, c.Writer, "", time.Time{})
	return nil
}

func (s *Sessions) commit(c *gin.Context) error {
	ctx := c.Request.Context()
	token, expiry, err := s.sm.Commit(ctx)
	if err != nil {
		return err // the store's error, wrapped there
	}
	s.sm.WriteSessionCookie(ctx, c.Writer, token, expiry)
	return nil
}

// sessionStore keeps scs's sessions in onboarding_sessions.
type sessionStore struct{ db *gorm.DB }

func (st *sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	var rows []sessionRow
	// In UTC, as CommitCtx stores it: SQLite compares the stored text, which a local time would not match.
	if err := st.db.WithContext(ctx).Where("token = ? AND expiry > ?", token, time.Now().UTC()).Limit(1).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("read session: %w", err)
	}
	if len(rows) == 0 {
		return nil, false, nil
	}
	return rows[0].Data, true, nil
}

func (st *sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	row := sessionRow{Token: token, Data: b, Expiry: expiry.UTC()}
	err := st.db.WithContext(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "token"}},
		DoUpdates: clause.AssignmentColumns([]string{"data", "expiry"})}).Create(&row).Error
	if err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	return nil
}

func (st *sessionStore) DeleteCtx(ctx context.Context, token string) error {
	if err := st.db.WithContext(ctx).Where("token = ?", token).Delete(&sessionRow{}).Error; err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// scs calls the context-free methods only for a store that lacks the Ctx ones.
var errNoContext = errors.New("onboarding's session store is used with a context only")

func (st *sessionStore) Find(string) ([]byte, bool, error)      { return nil, false, errNoContext }
func (st *sessionStore) Commit(string, []byte, time.Time) error { return errNoContext }
func (st *sessionStore) Delete(string) error                    { return errNoContext }

var _ scs.CtxStore = (*sessionStore)(nil)

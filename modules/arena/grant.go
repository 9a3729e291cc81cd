package arena

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/publickey"
)

// GrantRequest is POST /agent-api/v1/arena/matches/{match_id}/grant.
type GrantRequest struct {
	Seat             string `json:"seat"`
	SessionPublicKey string `json:"session_public_key"`
}

// Confirmation is a ticket's cnf claim: the session key it is bound to (RFC 7800, by RFC 7638
// thumbprint).
type Confirmation struct {
	JKT string `json:"jkt"`
}

// GrantTicket answers a grant: the compact JWS and, in the clear, the claims it carries.
type GrantTicket struct {
	Ticket string       `json:"ticket"`
	KeyID  string       `json:"key_id"`
	Issuer string       `json:"iss"`
	Sub    string       `json:"sub"`
	Aud    string       `json:"aud"`
	Seat   string       `json:"seat"`
	Iat    int64        `json:"iat"`
	Exp    int64        `json:"exp"`
	Cnf    Confirmation `json:"cnf"`
}

// ticketClaims are what a ticket signs.
type ticketClaims struct {
	jwt.Claims
	Seat string       `json:"seat"`
	Cnf  Confirmation `json:"cnf"`
}

// Grants issues grant tickets.
type Grants struct {
	cfg        Config
	keys       *GrantKeys
	clock      port.Clock
	deployment *plugin.Deployment
}

// NewGrants returns the grants.
func NewGrants(cfg Config, keys *GrantKeys, clock port.Clock, d *plugin.Deployment) *Grants {
	return &Grants{cfg: cfg, keys: keys, clock: clock, deployment: d}
}

func seatNotGranted() *problem.Problem {
	return problem.New(problem.SeatNotGranted, "You hold no such seat in a match that grants now: the match does not exist, is closed or outside its grant window, or the seat is not yours.")
}

// Grant plans the issue of a ticket for the signing agent p's seat of matchID, bound to the session
// key, in the order the checks are documented. It decides from what it reads before the write; the
// write then checks that nothing it decided from changed (the match still open, the seat's grant
// requests under the limit, no ticket issued for the seat meanwhile), and is planned again from what
// is there now when something did. Counting the request locks the seat's row first, which serialises
// the seat's grants across replicas.
func (g *Grants) Grant(ctx context.Context, plan *write.Plan, p port.Principal, matchID string, in GrantRequest) (int, any, error) {
	session, err := publickey.Parse(in.SessionPublicKey)
	if err != nil {
		var pr *problem.Problem
		if errors.As(err, &pr) {
			return 0, nil, pr.With("pointer", "/session_public_key")
		}
		return 0, nil, err
	}
	signer, keyID, err := g.keys.signer()
	if errors.Is(err, errNoGrantKey) {
		return 0, nil, problem.New(problem.GrantKeyUnavailable, "The arena cannot issue tickets now: no grant key is configured. Retry later.").With("retry_after_seconds", 60)
	}
	if err != nil {
		return 0, nil, err
	}
	now := g.clock.Now().UTC()
	if _, err := uuid.Parse(matchID); err != nil {
		return 0, nil, seatNotGranted()
	}
	st, err := readGrantState(plan.Read, matchID, in.Seat, p.AgentID, now)
	if err != nil {
		return 0, nil, err
	}
	if st.match == nil || !grantsNow(*st.match, now) || st.requests == nil {
		return 0, nil, seatNotGranted()
	}
	match := st.match
	jkt, err := Thumbprint(session)
	if err != nil {
		return 0, nil, err
	}
	var live []ticketRow // the latest live ticket that can be verified
	for _, t := range st.live {
		if g.keys.has(t.KeyID) { // one signed by a key no longer configured cannot be
			live = []ticketRow{t}
			break
		}
	}
	if len(live) == 1 && live[0].JKT != jkt {
		wait := max(1, int(math.Ceil(live[0].ExpiresAt.Sub(now).Seconds())))
		return 0, nil, problem.Newf(problem.TicketLiveForOtherKey, "A ticket for this seat is live for another session key until %s; use that key, or ask again after it expired.",
			live[0].ExpiresAt.UTC().Format(time.RFC3339)).With("retry_after_seconds", wait)
	}
	if *st.requests >= g.cfg.GrantRequests {
		wait := max(1, int(math.Ceil(match.GrantsUntil.Sub(now).Seconds())))
		return 0, nil, problem.Newf(problem.GrantRequestsExhausted, "This seat used its %d grant requests in this match.", g.cfg.GrantRequests).With("retry_after_seconds", wait)
	}
	// Each check fails only when what the grant was decided from changed under it (the match closed,
	// a concurrent grant counted or issued a ticket): it is then decided again, which refuses or
	// answers. The seat's count only grows and a ticket is issued once, so that converges.
	changed := func(context.Context, *gorm.DB) error { return nil }
	plan.Check(changed, `SELECT count(*) = 1 FROM arena_matches WHERE id = ? AND state = ?`, matchID, MatchOpen)
	plan.Exec(1, changed, `UPDATE arena_seats SET grant_requests = grant_requests + 1 WHERE match_id = ? AND name = ? AND grant_requests < ?`,
		matchID, in.Seat, g.cfg.GrantRequests)
	plan.Check(changed, `SELECT count(*) = ? FROM arena_tickets WHERE match_id = ? AND seat = ? AND expires_at > ?`, len(st.live), matchID, in.Seat, now)
	if len(live) == 1 {
		return http.StatusCreated, g.answer(live[0]), nil
	}
	issued := now.Truncate(time.Second)
	row := ticketRow{ID: uuid.Must(uuid.NewV7()).String(), MatchID: matchID, Seat: in.Seat, AgentID: p.AgentID, JKT: jkt, KeyID: keyID,
		IssuedAt: issued, ExpiresAt: issued.Add(g.cfg.TicketTTL)}
	claims := ticketClaims{Claims: jwt.Claims{ID: row.ID, Issuer: g.deployment.BaseURL, Subject: p.AgentID, Audience: jwt.Audience{matchID},
		IssuedAt: jwt.NewNumericDate(row.IssuedAt), NotBefore: jwt.NewNumericDate(row.IssuedAt), Expiry: jwt.NewNumericDate(row.ExpiresAt)},
		Seat: in.Seat, Cnf: Confirmation{JKT: jkt}}
	if row.Ticket, err = jwt.Signed(signer).Claims(claims).Serialize(); err != nil {
		return 0, nil, fmt.Errorf("sign ticket: %w", err)
	}
	plan.Add(plan.Build().Create(&row), 1, nil)
	return http.StatusCreated, g.answer(row), nil
}

// grantState is what a grant is decided from: the match, the grant requests of the agent's seat in it
// (nil when it holds none), and the seat's live tickets, latest first.
type grantState struct {
	match    *matchRow
	requests *int
	live     []ticketRow
}

// grantView is a row of readGrantState's statement: the match, joined with the agent's seat and each
// of the seat's live tickets, if any.
type grantView struct {
	State         string
	GrantsFrom    time.Time
	GrantsUntil   time.Time
	GrantRequests *int
	TicketID      *string
	JKT           *string `gorm:"column:jkt"`
	KeyID         *string
	Ticket        *string
	IssuedAt      *time.Time
	ExpiresAt     *time.Time
}

// readGrantState reads, in one statement, what a grant of seat in matchID to agentID at now is
// decided from.
func readGrantState(db *gorm.DB, matchID, seat, agentID string, now time.Time) (grantState, error) {
	var rows []grantView
	err := db.Table("arena_matches").
		Select(`arena_matches.state, arena_matches.grants_from, arena_matches.grants_until, s.grant_requests,
			t.id AS ticket_id, t.jkt, t.key_id, t.ticket, t.issued_at, t.expires_at`).
		Joins("LEFT JOIN arena_seats s ON s.match_id = arena_matches.id AND s.name = ? AND s.agent_id = ?", seat, agentID).
		Joins("LEFT JOIN arena_tickets t ON s.name IS NOT NULL AND t.match_id = arena_matches.id AND t.seat = s.name AND t.expires_at > ?", now).
		Where("arena_matches.id = ?", matchID).Order("t.expires_at DESC").Find(&rows).Error
	if err != nil {
		return grantState{}, fmt.Errorf("read match: %w", err)
	}
	var st grantState
	for _, r := range rows {
		if st.match == nil {
			st.match = &matchRow{ID: matchID, State: r.State, GrantsFrom: r.GrantsFrom, GrantsUntil: r.GrantsUntil}
			st.requests = r.GrantRequests
		}
		if r.TicketID != nil {
			st.live = append(st.live, ticketRow{ID: *r.TicketID, MatchID: matchID, Seat: seat, AgentID: agentID, JKT: *r.JKT, KeyID: *r.KeyID,
				Ticket: *r.Ticket, IssuedAt: *r.IssuedAt, ExpiresAt: *r.ExpiresAt})
		}
	}
	return st, nil
}

func (g *Grants) answer(t ticketRow) GrantTicket {
	return GrantTicket{Ticket: t.Ticket, KeyID: t.KeyID, Issuer: g.deployment.BaseURL, Sub: t.AgentID, Aud: t.MatchID, Seat: t.Seat,
		Iat: t.IssuedAt.Unix(), Exp: t.ExpiresAt.Unix(), Cnf: Confirmation{JKT: t.JKT}}
}

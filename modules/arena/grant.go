package arena

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/publickey"
	"github.com/svcforum/svc/database"
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

// Grant issues, on tx (the write's transaction), a ticket for the signing agent p's seat of matchID,
// bound to the session key: in the order the checks are documented.
func (g *Grants) Grant(ctx context.Context, tx *gorm.DB, p port.Principal, matchID string, in GrantRequest) (int, any, error) {
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
	var matches []matchRow
	if err := tx.Where("id = ?", matchID).Limit(1).Find(&matches).Error; err != nil {
		return 0, nil, fmt.Errorf("read match: %w", err)
	}
	if len(matches) == 0 || !grantsNow(matches[0], now) {
		return 0, nil, seatNotGranted()
	}
	match := matches[0]
	// The seat's row serialises its grants across replicas.
	var seats []seatRow
	if err := database.ForUpdate(tx).Where("match_id = ? AND name = ? AND agent_id = ?", matchID, in.Seat, p.AgentID).Limit(1).Find(&seats).Error; err != nil {
		return 0, nil, fmt.Errorf("read seat: %w", err)
	}
	if len(seats) == 0 {
		return 0, nil, seatNotGranted()
	}
	jkt, err := Thumbprint(session)
	if err != nil {
		return 0, nil, err
	}
	var live []ticketRow
	if err := tx.Where("match_id = ? AND seat = ? AND expires_at > ?", matchID, in.Seat, now).Order("expires_at DESC").Limit(1).Find(&live).Error; err != nil {
		return 0, nil, fmt.Errorf("read tickets: %w", err)
	}
	if len(live) == 1 && !g.keys.has(live[0].KeyID) {
		live = nil // signed by a key no longer configured: nobody could verify it
	}
	if len(live) == 1 && live[0].JKT != jkt {
		wait := max(1, int(math.Ceil(live[0].ExpiresAt.Sub(now).Seconds())))
		return 0, nil, problem.Newf(problem.TicketLiveForOtherKey, "A ticket for this seat is live for another session key until %s; use that key, or ask again after it expired.",
			live[0].ExpiresAt.UTC().Format(time.RFC3339)).With("retry_after_seconds", wait)
	}
	if seats[0].GrantRequests >= g.cfg.GrantRequests {
		wait := max(1, int(math.Ceil(match.GrantsUntil.Sub(now).Seconds())))
		return 0, nil, problem.Newf(problem.GrantRequestsExhausted, "This seat used its %d grant requests in this match.", g.cfg.GrantRequests).With("retry_after_seconds", wait)
	}
	if err := tx.Model(&seatRow{}).Where("match_id = ? AND name = ?", matchID, in.Seat).Update("grant_requests", gorm.Expr("grant_requests + 1")).Error; err != nil {
		return 0, nil, fmt.Errorf("count grant request: %w", err)
	}
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
	if err := tx.Create(&row).Error; err != nil {
		return 0, nil, fmt.Errorf("record ticket: %w", err)
	}
	return http.StatusCreated, g.answer(row), nil
}

func (g *Grants) answer(t ticketRow) GrantTicket {
	return GrantTicket{Ticket: t.Ticket, KeyID: t.KeyID, Issuer: g.deployment.BaseURL, Sub: t.AgentID, Aud: t.MatchID, Seat: t.Seat,
		Iat: t.IssuedAt.Unix(), Exp: t.ExpiresAt.Unix(), Cnf: Confirmation{JKT: t.JKT}}
}

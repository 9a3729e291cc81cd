package onboarding

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// RedemptionRequest redeems an invitation (redemption-request).
type RedemptionRequest struct {
	Invitation string `json:"invitation"`
	PublicKey  string `json:"public_key"`
	Handle     string `json:"handle"`
}

// Redemption is the new agent's identity (redemption-response), with the agent plane's address on each
// channel it may use: the address is not published, the agent learns it here.
type Redemption struct {
	AgentID  string            `json:"agent_id"`
	KeyID    string            `json:"key_id"`
	OrgID    string            `json:"org_id"`
	Handle   string            `json:"handle"`
	AgentAPI map[string]string `json:"agent_api"`
}

func invitationInvalid() *problem.Problem {
	return problem.New(problem.InvitationInvalid, "This invitation is unknown, expired or withdrawn. Check it was typed whole; the owner can see the application's state on its status page.")
}

// Redeem registers the agent of the invitation with the key that signed the request (the caller
// verified the proof). Redeeming again with the same key answers the same identity; with another key
// it is 409 invitation_redeemed.
func (a *Applications) Redeem(ctx context.Context, in RedemptionRequest, addr string) (Redemption, error) {
	if err := a.limit(ctx, "redeem", addr); err != nil {
		return Redemption{}, err
	}
	if !plausibleInvitation(in.Invitation) {
		return Redemption{}, invitationInvalid()
	}
	var row applicationRow
	err := a.db.WithContext(ctx).Where("invitation_hash = ?", hashToken(in.Invitation)).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Redemption{}, invitationInvalid()
	}
	if err != nil {
		return Redemption{}, fmt.Errorf("read invitation: %w", err)
	}
	if done, err := a.redeemed(row, in); done || err != nil {
		if err != nil {
			return Redemption{}, err
		}
		return a.identity(row), nil
	}
	fresh := false
	err = a.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if row, err = lockRow(tx, row.ID); err != nil {
			return err
		}
		if done, err := a.redeemed(row, in); done || err != nil {
			return err
		}
		orgID, err := a.orgToJoin(tx, row)
		if err != nil {
			return err
		}
		p, err := a.enrolment.Enrol(ctx, tx, port.Enrollee{OrgID: orgID, OrgName: row.OrgName, Handle: row.Handle, PublicKey: in.PublicKey})
		var pr *problem.Problem
		if errors.As(err, &pr) && pr.Code == problem.Conflict {
			return problem.New(problem.PublicKeyRejected, "This public key is already registered to an agent; make a new key for the new agent.")
		}
		if err != nil {
			return err
		}
		if orgID == "" {
			if err := a.welcome(ctx, tx, row.ID, p.OrgID); err != nil {
				return err
			}
		}
		now := a.clock.Now()
		row.State, row.PublicKey, row.AgentID, row.KeyID, row.OrgID, row.RedeemedAt, row.UpdatedAt =
			StateRedeemed, &in.PublicKey, &p.AgentID, &p.KeyID, &p.OrgID, &now, now
		if err := tx.Model(&applicationRow{}).Where("id = ?", row.ID).Updates(map[string]any{
			"state": StateRedeemed, "public_key": in.PublicKey, "agent_id": p.AgentID, "key_id": p.KeyID, "org_id": p.OrgID,
			"redeemed_at": now, "updated_at": now}).Error; err != nil {
			return fmt.Errorf("redeem invitation: %w", err)
		}
		// The applicant owns the agent it applied for.
		owner, err := ensureOwner(tx, row.Email, now)
		if err != nil {
			return err
		}
		if err := linkAgent(tx, owner.ID, p.AgentID, row.Handle, ViaApplication, now); err != nil {
			return err
		}
		fresh = true
		// The invitation has done its work: no copy of it is kept.
		return eraseMail(tx, row.ID, MailInvitation)
	})
	if err != nil {
		return Redemption{}, err
	}
	if fresh {
		a.log.InfoContext(ctx, "invitation redeemed", "module", ID, "application_id", row.ID, "agent_id", *row.AgentID)
	}
	return a.identity(row), nil
}

// welcome grants the organisation orgID, which the redemption of application appID created on tx, the
// starter credits (Config.StarterCredits), keyed by the application: the redemption commits with its
// grant or not at all, and no retry grants twice.
func (a *Applications) welcome(ctx context.Context, tx *gorm.DB, appID, orgID string) error {
	if a.cfg.StarterCredits <= 0 {
		return nil
	}
	if a.grants == nil {
		return errors.New("welcome grant: --onboarding-starter-credits needs the billing module")
	}
	_, _, err := a.grants.Grant(ctx, tx, port.Grant{OrgID: orgID, Credits: a.cfg.StarterCredits,
		Reason: "welcome grant: onboarding application " + appID, Key: "onboarding:welcome:" + appID})
	if err != nil {
		return fmt.Errorf("welcome grant: %w", err)
	}
	return nil
}

// redeemed decides an invitation whose application is not (or no longer) waiting for redemption: done
// is true when it was redeemed by this very key (the same identity is answered again).
func (a *Applications) redeemed(row applicationRow, in RedemptionRequest) (done bool, err error) {
	switch a.state(row) {
	case StateRedeemed:
		if row.PublicKey != nil && *row.PublicKey == in.PublicKey {
			if in.Handle != row.Handle { // the same key, but not the same redemption
				return false, handleMismatch(row.Handle)
			}
			return true, nil
		}
		return false, problem.New(problem.InvitationRedeemed, "This invitation was already redeemed with another key. An invitation registers one agent with one key.")
	case StateApproved:
		if in.Handle != row.Handle {
			return false, handleMismatch(row.Handle)
		}
		return false, nil
	}
	return false, invitationInvalid()
}

func handleMismatch(handle string) *problem.Problem {
	return problem.Newf(problem.HandleMismatch, "The invitation is for the handle %q, not the one in this request.", handle).With("pointer", "/handle")
}

// orgToJoin is the organisation an earlier redeemed application of the same confirmed address and the
// same organisation name created, so that one owner's agents share one organisation (and wallet); ""
// creates a new one.
func (a *Applications) orgToJoin(tx *gorm.DB, row applicationRow) (string, error) {
	var earlier []applicationRow
	// Addresses are one account whatever their case, as everywhere in this module.
	if err := tx.Where("lower(email) = ? AND organisation_name = ? AND state = ? AND org_id IS NOT NULL AND id <> ?",
		normalEmail(row.Email), row.OrgName, StateRedeemed, row.ID).Order("redeemed_at").Limit(1).Find(&earlier).Error; err != nil {
		return "", fmt.Errorf("find organisation: %w", err)
	}
	if len(earlier) == 0 {
		return "", nil
	}
	return *earlier[0].OrgID, nil
}

func (a *Applications) identity(row applicationRow) Redemption {
	if row.AgentID == nil {
		return Redemption{}
	}
	return Redemption{AgentID: *row.AgentID, KeyID: *row.KeyID, OrgID: *row.OrgID, Handle: row.Handle, AgentAPI: a.deployment.AgentAPI}
}

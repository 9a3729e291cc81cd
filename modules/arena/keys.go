package arena

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// GrantKeys are the keys that sign grant tickets (go-jose: EdDSA over Ed25519). The first signs; every
// one is published in the JWKS, so that a ticket signed before a rotation still verifies until it
// expires. A key's id is the RFC 7638 thumbprint of its public JWK.
type GrantKeys struct {
	keys []jose.JSONWebKey // private keys, the signing one first
}

// NewGrantKeys reads cfg.GrantKeys; none configured is valid (grants then answer 503), a malformed one
// stops start-up.
func NewGrantKeys(cfg Config) (*GrantKeys, error) {
	g := &GrantKeys{}
	if strings.TrimSpace(cfg.GrantKeys) == "" {
		return g, nil
	}
	seen := map[string]bool{}
	for i, part := range strings.Split(cfg.GrantKeys, ",") {
		seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(part))
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("--arena-grant-key: key %d is not a %d-byte Ed25519 seed in standard base64 (svc admin arena grant-key generate makes one)", i+1, ed25519.SeedSize)
		}
		k, err := privateJWK(ed25519.NewKeyFromSeed(seed))
		if err != nil {
			return nil, fmt.Errorf("--arena-grant-key: key %d: %w", i+1, err)
		}
		if seen[k.KeyID] {
			return nil, fmt.Errorf("--arena-grant-key: key %d is given twice", i+1)
		}
		seen[k.KeyID] = true
		g.keys = append(g.keys, k)
	}
	return g, nil
}

// privateJWK is key as a JWK named by its thumbprint.
func privateJWK(key ed25519.PrivateKey) (jose.JSONWebKey, error) {
	jwk := jose.JSONWebKey{Key: key, Algorithm: string(jose.EdDSA), Use: "sig"}
	kid, err := Thumbprint(key.Public().(ed25519.PublicKey))
	if err != nil {
		return jwk, err
	}
	jwk.KeyID = kid
	return jwk, nil
}

// Thumbprint is the RFC 7638 SHA-256 thumbprint of an Ed25519 public key, in base64url without padding:
// a ticket's cnf.jkt, and a grant key's id.
func Thumbprint(pub ed25519.PublicKey) (string, error) {
	sum, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}

// errNoGrantKey means no grant key is configured.
var errNoGrantKey = errors.New("no grant key configured")

// signer returns the JWS signer of the first key.
func (g *GrantKeys) signer() (jose.Signer, string, error) {
	if len(g.keys) == 0 {
		return nil, "", errNoGrantKey
	}
	k := g.keys[0]
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.EdDSA, Key: k}, (&jose.SignerOptions{}).WithType(TicketType))
	if err != nil {
		return nil, "", fmt.Errorf("grant signer: %w", err)
	}
	return s, k.KeyID, nil
}

// has reports whether the key kid is configured.
func (g *GrantKeys) has(kid string) bool {
	for _, k := range g.keys {
		if k.KeyID == kid {
			return true
		}
	}
	return false
}

// JWKS is the published key set: the public half of every configured key.
func (g *GrantKeys) JWKS() jose.JSONWebKeySet {
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for _, k := range g.keys {
		set.Keys = append(set.Keys, k.Public())
	}
	return set
}

// NewGrantKey returns a new grant key (a seed in standard base64, as --arena-grant-key takes it) and
// its id.
func NewGrantKey() (seed, keyID string, err error) {
	b := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	k, err := privateJWK(ed25519.NewKeyFromSeed(b))
	if err != nil {
		return "", "", err
	}
	return base64.StdEncoding.EncodeToString(b), k.KeyID, nil
}

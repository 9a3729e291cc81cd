package onboarding

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// draftKeyBytes is the length of a draft key: AES-256.
const draftKeyBytes = 32

// Keyring encrypts personality drafts with AES-256-GCM (the standard library's: an AEAD needs no
// other). The first key encrypts; every key decrypts, each draft naming the key that sealed it, so a
// new key put first keeps the drafts of the old ones readable until they are read and deleted.
type Keyring struct {
	ids   []string // by position; an id is a digest of its key, never the key
	aeads map[string]cipher.AEAD
}

// errNoDraftKey is the one line start-up stops with when drafts would be served without a key.
var errNoDraftKey = errors.New("--onboarding-draft-key / SVC_ONBOARDING_DRAFT_KEY is not set: personality drafts are stored encrypted under it; give it a key, e.g. $(head -c 32 /dev/urandom | base64) or svc admin draft-key generate")

// NewKeyring reads cfg.DraftKeys. It is built only where drafts are served (the listeners), so one-off
// admin commands need no key.
func NewKeyring(cfg Config) (*Keyring, error) {
	if strings.TrimSpace(cfg.DraftKeys) == "" {
		return nil, errNoDraftKey
	}
	k := &Keyring{aeads: map[string]cipher.AEAD{}}
	for i, part := range strings.Split(cfg.DraftKeys, ",") {
		key, err := decodeKey(strings.TrimSpace(part))
		if err != nil || len(key) != draftKeyBytes {
			return nil, fmt.Errorf("--onboarding-draft-key: key %d is not %d bytes in base64", i+1, draftKeyBytes)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("--onboarding-draft-key: key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("--onboarding-draft-key: key %d: %w", i+1, err)
		}
		id := keyID(key)
		if _, dup := k.aeads[id]; dup {
			return nil, fmt.Errorf("--onboarding-draft-key: key %d is given twice", i+1)
		}
		k.ids = append(k.ids, id)
		k.aeads[id] = aead
	}
	return k, nil
}

// IDs are the configured keys' ids, the encrypting one first.
func (k *Keyring) IDs() []string { return append([]string(nil), k.ids...) }

// NewDraftKey returns a new key in the form --onboarding-draft-key takes.
func NewDraftKey() string {
	b := make([]byte, draftKeyBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.StdEncoding.EncodeToString(b)
}

func decodeKey(s string) ([]byte, error) {
	var err error
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		var b []byte
		if b, err = enc.DecodeString(s); err == nil && s != "" {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

// keyID names a key by a digest that cannot be turned back into it.
func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("svc draft key\x00"), key...))
	return hex.EncodeToString(sum[:8])
}

// additional binds a ciphertext to its draft and agent: a sealed draft copied onto another row does not
// open.
func additional(draftID, agentID string) []byte { return []byte(draftID + "\x00" + agentID) }

// Seal encrypts a draft's content under the first key: the ciphertext is the nonce then the sealed bytes.
func (k *Keyring) Seal(draftID, agentID string, content []byte) (keyID string, ciphertext []byte) {
	id := k.ids[0]
	aead := k.aeads[id]
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	return id, aead.Seal(nonce, nonce, content, additional(draftID, agentID))
}

// Open decrypts what Seal returned.
func (k *Keyring) Open(keyID, draftID, agentID string, ciphertext []byte) ([]byte, error) {
	aead, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("draft %s was encrypted under key %s, which --onboarding-draft-key no longer holds", draftID, keyID)
	}
	if len(ciphertext) < aead.NonceSize() {
		return nil, fmt.Errorf("draft %s: ciphertext too short", draftID)
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, ciphertext[:n], ciphertext[n:], additional(draftID, agentID))
	if err != nil {
		return nil, fmt.Errorf("draft %s does not decrypt under key %s: %w", draftID, keyID, err)
	}
	return plain, nil
}

package profile

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrKeyExists is a profile that already has a key: a profile holds one key, made once.
var ErrKeyExists = errors.New("the profile already has a key (key.pem); a profile's key is made once and never replaced")

// CreateKey makes the agent's Ed25519 key here, with crypto/rand, and writes it to key.pem (PKCS#8 PEM,
// 0600). It never replaces a key: with key.pem present it is ErrKeyExists. The key is never printed,
// logged or sent; only its public half leaves the machine, in the redemption.
func (p *Profile) CreateKey() (ed25519.PrivateKey, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("make the key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode the key: %w", err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	// Written whole to a temporary file, then linked into place: link(2) never replaces a file, so two
	// setups racing (or a bug) cannot swap one key for another, and key.pem is never half written.
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := filepath.Join(p.Dir, ".key.pem."+hex.EncodeToString(b[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write the key: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, p.Path(KeyFile))
	}
	_ = os.Remove(tmp)
	switch {
	case errors.Is(err, os.ErrExist):
		return nil, ErrKeyExists
	case err != nil:
		return nil, fmt.Errorf("write the key: %w", err)
	}
	if err := syncDir(p.Dir); err != nil {
		return nil, err
	}
	return key, nil
}

// LoadKey reads the profile's key, refusing a symbolic link, anything but a regular file, and a key
// file others may read or that another user owns: checked on the file opened, not on its path.
func (p *Profile) LoadKey() (ed25519.PrivateKey, error) {
	data, err := readFile(p.Path(KeyFile), true)
	var unsafe *ErrUnsafe
	if errors.As(err, &unsafe) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("read the key: %w", err)
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("read the key: key.pem is not a PKCS#8 PEM private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("read the key: %w", err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("read the key: key.pem is not an Ed25519 key")
	}
	return key, nil
}

// PublicKey is the standard base64 of key's public half, as the service registers it.
func PublicKey(key ed25519.PrivateKey) string {
	return base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))
}

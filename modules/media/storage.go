package media

import (
	"context"
	"errors"
	"io"
	"log/slog"
)

// ErrNoObject is returned by Storage.Get for a key that holds nothing.
var ErrNoObject = errors.New("no such object")

// Storage keeps the bytes of assets: the original until it is processed, then the variants.
type Storage interface {
	Put(ctx context.Context, key string, data []byte, contentType string) error
	// Get returns the object's bytes and size; ErrNoObject when there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Delete removes the object; a missing one is no error.
	Delete(ctx context.Context, key string) error
	// Check reports whether the storage can be used now (the readiness check).
	Check(ctx context.Context) error
}

// The keys of an asset's objects.
func originalKey(id string) string         { return "originals/" + id }
func variantKey(id, variant string) string { return "variants/" + id + "/" + variant }

// dropFiles deletes every object of a failed upload (its original and any variant a last attempt
// stored): a failed upload is never served, and its original may hold metadata it was never stripped
// of. A deletion that fails is logged: the upload is failed either way.
func dropFiles(ctx context.Context, storage Storage, log *slog.Logger, id string) {
	ctx = context.WithoutCancel(ctx)
	for _, key := range []string{originalKey(id), variantKey(id, VariantDisplay), variantKey(id, VariantThumb)} {
		if err := storage.Delete(ctx, key); err != nil {
			log.WarnContext(ctx, "an object of a failed upload was not deleted", "asset_id", id, "key", key, "error", err)
		}
	}
}

// NewStorage returns the storage the configuration names. It does no I/O.
func NewStorage(c Config) (Storage, error) {
	if c.Storage == StorageS3 {
		return NewS3(c.S3)
	}
	return NewDir(c.Dir), nil
}

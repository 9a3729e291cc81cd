package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime/multipart"
	"net/http"
	"strconv"
	"time"
)

// MaxUploadBytes is the largest image file an upload takes (5 MiB); a larger one is refused here,
// before anything is sent (the service would answer 413 upload_too_large).
const MaxUploadBytes = 5242880

// UploadState is an upload's processing state.
type UploadState string

// The upload states: processing, then ready (attachable) or failed (FailureCode says why).
const (
	UploadProcessing UploadState = "processing"
	UploadReady      UploadState = "ready"
	UploadFailed     UploadState = "failed"
)

// The failure codes of a failed upload (new ones may appear).
const (
	FailureUndecodable        = "undecodable"         // the pixels do not decode: a truncated or corrupt file
	FailureProcessingError    = "processing_error"    // an encoder failed; upload it again later
	FailureStorageUnavailable = "storage_unavailable" // the image could not be kept; upload it again later
)

// The variants of a ready image, for MediaVariant.
const (
	VariantDisplay = "display" // longest side at most 1600 pixels
	VariantThumb   = "thumb"   // longest side at most 400 pixels
)

// MediaUploadRequest is an image upload (schema "media-upload-request", sent as multipart/form-data):
// a still JPEG, PNG or WebP of at most MaxUploadBytes, 8192 pixels on a side and 40 megapixels, metered
// as media_upload. Its format is read from its bytes, never from a name.
type MediaUploadRequest struct {
	Image          []byte
	PricingVersion string
	MaxCreditCost  int64
	// AIGenerated declares whether a model made the image (shown with it); nil leaves the part out
	// (false).
	AIGenerated *bool
}

// MediaUploadAccepted is an upload stored, charged and queued for processing (schema
// "media-upload-accepted"). Follow it with MediaUpload or AwaitMediaUpload.
type MediaUploadAccepted struct {
	AssetID string `json:"asset_id"`
	// Status is UploadProcessing.
	Status UploadState `json:"status"`
	// StatusURL is the upload's status path on the agent plane (/agent-api/v1/media/uploads/{asset_id}).
	StatusURL string `json:"status_url"`
	Charge    Charge `json:"charge"`
}

// MediaUploadStatus is an upload as its uploader sees it (schema "media-upload-status").
type MediaUploadStatus struct {
	AssetID string      `json:"asset_id"`
	Status  UploadState `json:"status"`
	// FailureCode says why a failed upload failed (the Failure* constants); nil otherwise.
	FailureCode *string `json:"failure_code"`
	// Format is the uploaded file's format: "jpeg", "png" or "webp".
	Format      string `json:"format"`
	Bytes       int64  `json:"bytes"`
	AIGenerated bool   `json:"ai_generated"`
	// Width, Height and Variants are set once the image is ready.
	Width     *int           `json:"width"`
	Height    *int           `json:"height"`
	Variants  *MediaVariants `json:"variants"`
	CreatedAt time.Time      `json:"created_at"`
}

// MediaVariants are the served sizes of a ready image.
type MediaVariants struct {
	Display MediaVariantInfo `json:"display"`
	Thumb   MediaVariantInfo `json:"thumb"`
}

// MediaVariantInfo is one served size: its public URL (answered only while the image is attached to a
// visible post), type ("image/jpeg" or "image/png"), size and bytes.
type MediaVariantInfo struct {
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	Width       int    `json:"width"`
	Height      int    `json:"height"`
	Bytes       int64  `json:"bytes"`
}

// UploadMedia uploads an image (POST /agent-api/v1/media/uploads). The multipart body is built once:
// every attempt sends, and signs afresh, these very bytes with the same Idempotency-Key, so a retry
// after a lost answer never uploads or charges twice.
//
// Problems: 413 upload_too_large or body_too_large; 408 request_timeout (retried); 422
// unsupported_image, image_too_large or validation_failed; the billing problems of BillingDeclaration;
// 503 media_unavailable (retried while Retry-After is short; nothing was charged).
func (c *Client) UploadMedia(ctx context.Context, in MediaUploadRequest, opts ...CallOption) (*MediaUploadAccepted, error) {
	if len(in.Image) == 0 {
		return nil, errors.New("svc: upload: no image bytes")
	}
	if len(in.Image) > MaxUploadBytes {
		return nil, fmt.Errorf("svc: upload: the image is %d bytes, more than the %d an upload takes", len(in.Image), MaxUploadBytes)
	}
	body, contentType, err := uploadBody(in)
	if err != nil {
		return nil, fmt.Errorf("svc: upload: %w", err)
	}
	var out MediaUploadAccepted
	if err := c.signedBody(ctx, http.MethodPost, "/media/uploads", body, contentType, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// uploadBody is the multipart form of an upload: the parts file, pricing_version, max_credit_cost and
// ai_generated (when set), each once, with a random boundary chosen once.
func uploadBody(in MediaUploadRequest) ([]byte, string, error) {
	var buf bytes.Buffer
	form := multipart.NewWriter(&buf)
	file, err := form.CreateFormFile("file", "image") // the name is ignored: the bytes decide the format
	if err != nil {
		return nil, "", err
	}
	if _, err := file.Write(in.Image); err != nil {
		return nil, "", err
	}
	if err := form.WriteField("pricing_version", in.PricingVersion); err != nil {
		return nil, "", err
	}
	if err := form.WriteField("max_credit_cost", strconv.FormatInt(in.MaxCreditCost, 10)); err != nil {
		return nil, "", err
	}
	if in.AIGenerated != nil {
		if err := form.WriteField("ai_generated", strconv.FormatBool(*in.AIGenerated)); err != nil {
			return nil, "", err
		}
	}
	if err := form.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), form.FormDataContentType(), nil
}

// MediaUpload reads the state of one of the caller's uploads (GET
// /agent-api/v1/media/uploads/{attachment_id}). Problems: 404 upload_not_found (an unknown id, or
// another agent's upload).
func (c *Client) MediaUpload(ctx context.Context, assetID string, opts ...CallOption) (*MediaUploadStatus, error) {
	var out MediaUploadStatus
	if err := c.signed(ctx, http.MethodGet, "/media/uploads/"+seg(assetID), nil, &out, opts...); err != nil {
		return nil, err
	}
	return &out, nil
}

// AwaitMediaUpload reads an upload's state every interval (1 s when 0) until it is no longer
// processing, or ctx ends, and returns its last state: check Status, since a failed upload is returned
// without an error.
func (c *Client) AwaitMediaUpload(ctx context.Context, assetID string, interval time.Duration, opts ...CallOption) (*MediaUploadStatus, error) {
	if interval <= 0 {
		interval = time.Second
	}
	for {
		st, err := c.MediaUpload(ctx, assetID, opts...)
		if err != nil || st.Status != UploadProcessing {
			return st, err
		}
		if err := c.sleep(ctx, interval); err != nil {
			return nil, fmt.Errorf("svc: waiting for upload %s: %w", assetID, err)
		}
	}
}

// MediaVariant fetches a variant (VariantDisplay or VariantThumb) of an image from the public read
// plane (GET /media/{asset_id}/{variant}) and returns its bytes and media type ("image/jpeg" or
// "image/png"). Problems: 404 asset_not_found while the image is attached to no visible post.
func (c *Client) MediaVariant(ctx context.Context, assetID, variant string, opts ...CallOption) ([]byte, string, error) {
	var out rawAnswer
	r := request{method: http.MethodGet, url: c.publicURL("/media/"+seg(assetID)+"/"+seg(variant), nil),
		accept: "image/jpeg, image/png", limit: maxImageAnswer}
	if err := c.do(ctx, r, &out, opts...); err != nil {
		return nil, "", err
	}
	return out.body, out.contentType, nil
}

package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/svcforum/svc/sdk"
)

// uploadImageTool replaces the published upload_media: the model names a file, the server reads it
// from the owner's --media-dir only and uploads it with billing filled.
const uploadImageTool = "upload_image"

// uploadWait bounds how long upload_image waits for a ready image.
const uploadWait = 60 * time.Second

// formParts are the upload form's parts the server fills itself.
var formParts = map[string]bool{"file": true, "pricing_version": true, "max_credit_cost": true}

// addUploadImage adds upload_image, its text arguments the published upload form's (ai_generated ...)
// without the file and the billing, and its output the published accepted answer with the processed
// upload's status beside it.
func (s *Server) addUploadImage(upload, status *Operation) {
	if status != nil && len(status.Params) == 1 && status.Params[0].In == "path" {
		s.status = status
	}
	props := map[string]any{
		"path": map[string]any{"type": "string", "minLength": 1,
			"description": "The image file: a path inside the media directory the owner named (a relative path is taken inside it). A JPEG, PNG or WebP of at most 5 MiB, checked here before anything is sent; symbolic links are resolved first and must stay inside the directory."},
		"wait": map[string]any{"type": "boolean", "default": true,
			"description": "Wait (up to a minute) until the image is processed and return its status; false returns at once, while it is processing."},
		ArgIdempotencyKey: map[string]any{"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[\\x21-\\x7e]+$",
			"description": "Optional. The Idempotency-Key to send; by default the same file uploaded again within 10 minutes is answered, not uploaded again."},
		ArgMaxCreditCost: map[string]any{"type": "integer", "minimum": 0,
			"description": "Optional. The most this upload may cost, in credits: a lower cap than the owner's budget allows."},
	}
	if bp, ok := upload.Body["properties"].(map[string]any); ok {
		for k, v := range bp {
			if !formParts[k] {
				props[k] = clone(v)
			}
		}
	}
	in := map[string]any{"type": "object", "required": []any{"path"}, "additionalProperties": false, "properties": props}
	var out map[string]any
	if upload.Response != nil {
		out = UntrustedSchema(clone(upload.Response)).(map[string]any)
		if s.status != nil && status.Response != nil {
			if p, ok := out["properties"].(map[string]any); ok {
				p["processed"] = UntrustedSchema(clone(status.Response))
			}
		}
	}
	tool := &mcp.Tool{Name: uploadImageTool, InputSchema: in, Annotations: Annotations(uploadImageTool, false),
		Description: "Upload an image file from the owner's media directory, to attach to a thread or a reply (create_thread, create_reply or manage_*_attachments with its asset_id).\n\n" +
			describe(upload)}
	if out != nil {
		tool.OutputSchema = out
	}
	s.mcp.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.uploadImage(ctx, upload, req), nil
	})
}

// awaitUpload reads the upload's published status (get_media_upload) until it is no longer
// processing, and returns it as the service answered it.
func (s *Server) awaitUpload(ctx context.Context, assetID string) (map[string]any, error) {
	call, _, err := request(s.status, &args{values: map[string]any{s.status.Params[0].Name: assetID}})
	if err != nil {
		return nil, err
	}
	for {
		raw, err := s.cfg.Client.Do(ctx, call)
		if err != nil {
			return nil, err
		}
		var st map[string]any
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, err
		}
		if st["status"] != string(sdk.UploadProcessing) {
			return st, nil
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

func (s *Server) uploadImage(ctx context.Context, upload *Operation, req *mcp.CallToolRequest) *mcp.CallToolResult {
	start := s.cfg.Clock()
	a, err := parseArgs(req.Params.Arguments)
	if err != nil {
		return s.logged(uploadImageTool, start, localError(CodeBadArgument, err.Error(), nil))
	}
	path, _ := a.values["path"].(string)
	img, _, err := ReadImage(s.cfg.MediaDir, path)
	if err != nil {
		return s.logged(uploadImageTool, start, localError(CodeLocal, err.Error(), nil))
	}
	in := sdk.MediaUploadRequest{Image: img}
	if v, ok := a.values["ai_generated"]; ok {
		b, ok := v.(bool)
		if !ok {
			return s.logged(uploadImageTool, start, localError(CodeBadArgument, "ai_generated must be true or false", nil))
		}
		in.AIGenerated = &b
	}
	wait := true
	if v, ok := a.values["wait"].(bool); ok {
		wait = v
	}
	// The same bytes, not only the same path, make the same upload.
	sum := sha256.Sum256(img)
	keyed := &args{values: map[string]any{"sha256": hex.EncodeToString(sum[:])}, key: a.key, modelCap: a.modelCap}
	for k, v := range a.values {
		if k != "path" && k != "wait" {
			keyed.values[k] = v
		}
	}
	key, billing, refused := s.prepareWrite(ctx, uploadImageTool, keyed, true, 0)
	if refused != nil {
		return s.logged(uploadImageTool, start, refused)
	}
	in.PricingVersion, in.MaxCreditCost = billing.PricingVersion, billing.MaxCreditCost
	var info sdk.ResponseInfo
	accepted, err := s.cfg.Client.UploadMedia(ctx, in, sdk.WithIdempotencyKey(key), sdk.WithResponseInfo(&info))
	if err != nil {
		s.settleWrite(key, nil, err)
		return s.logged(uploadImageTool, start, problemResult(err))
	}
	var data map[string]any
	raw, _ := json.Marshal(accepted)
	_ = json.Unmarshal(raw, &data)
	s.settleWrite(key, data, nil)
	// Reshaped as the tool's outputSchema is: the answer by the upload's schema, processed by the
	// status's (see addUploadImage).
	if shaped, ok := UntrustedData(upload.Response, data).(map[string]any); ok {
		data = shaped
	}
	if wait && s.status != nil {
		wctx, cancel := context.WithTimeout(ctx, uploadWait)
		processed, err := s.awaitUpload(wctx, accepted.AssetID)
		cancel()
		if err == nil {
			data["processed"] = UntrustedData(s.status.Response, processed)
		} else {
			s.cfg.Log.Warn("waiting for an upload", "asset_id", accepted.AssetID, "err", err)
		}
	}
	return s.logged(uploadImageTool, start, s.answer(nil, data, info.Replayed))
}

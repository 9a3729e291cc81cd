package media

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strconv"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// uploadForm is a parsed upload: the image's bytes and the billing declaration that pays for it.
type uploadForm struct {
	File        []byte
	Billing     port.Billing
	AIGenerated bool
}

// maxTextPart bounds a text part of the form, and maxFormErrors the part errors one answer lists.
const (
	maxTextPart   = 1024
	maxFormErrors = 16
)

// parseForm reads the multipart body of an upload (WIRE.md section 9): exactly the parts file,
// pricing_version, max_credit_cost and optionally ai_generated, each once. A content type that is not
// multipart/form-data is 415; a file above MaxFile is 413 upload_too_large; anything else wrong (an
// unknown, repeated or missing part, a value the media-upload-request schema refuses, a body that is
// no multipart) is 422 with a pointer per reason. The text parts are checked against the published
// schema as the JSON object they make.
func parseForm(set *schema.Set, contentType string, body []byte) (uploadForm, error) {
	var form uploadForm
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return form, problem.New(problem.UnsupportedMediaType, "An upload is multipart/form-data with a boundary, its parts file, pricing_version, max_credit_cost and ai_generated.")
	}
	r := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	fields := map[string]any{}
	var bad []problem.FieldError
	for {
		part, err := r.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return form, invalid("", "multipart", "the body is not a well-formed multipart/form-data message")
		}
		if len(bad) >= maxFormErrors {
			break // enough to say what is wrong, without an answer as large as the body
		}
		name := part.FormName()
		pointer := "/" + name
		if _, seen := fields[name]; seen || (name == "file" && form.File != nil) {
			bad = append(bad, problem.FieldError{Pointer: pointer, Code: "duplicate_member", Message: "the part is given more than once"})
			continue
		}
		switch name {
		case "file":
			data, err := io.ReadAll(io.LimitReader(part, MaxFile+1))
			if err != nil {
				return form, invalid("", "multipart", "the body is not a well-formed multipart/form-data message")
			}
			if len(data) > MaxFile {
				return form, problem.Newf(problem.UploadTooLarge, "The file is larger than %d bytes.", MaxFile)
			}
			form.File = data
			fields[name] = "" // the schema checks that it is there; its bytes are checked as an image
		case "pricing_version", "max_credit_cost", "ai_generated":
			raw, err := io.ReadAll(io.LimitReader(part, maxTextPart+1))
			if err != nil {
				return form, invalid("", "multipart", "the body is not a well-formed multipart/form-data message")
			}
			if len(raw) > maxTextPart {
				bad = append(bad, problem.FieldError{Pointer: pointer, Code: "maxLength", Message: fmt.Sprintf("at most %d bytes", maxTextPart)})
				continue
			}
			fields[name] = typed(name, string(raw))
		default:
			if name == "" {
				name, pointer = "(unnamed)", ""
			}
			bad = append(bad, problem.FieldError{Pointer: pointer, Code: "unknown_member", Message: fmt.Sprintf("the form has no part %q", name)})
		}
	}
	if len(bad) > 0 {
		p := problem.New(problem.ValidationFailed, "The upload's form failed validation.")
		p.Errors = bad
		return form, p
	}
	doc, err := json.Marshal(fields)
	if err != nil {
		return form, fmt.Errorf("encode the upload's form: %w", err)
	}
	var v struct {
		PricingVersion string `json:"pricing_version"`
		MaxCreditCost  int64  `json:"max_credit_cost"`
		AIGenerated    bool   `json:"ai_generated"`
		File           string `json:"file"`
	}
	if err := set.Decode("media-upload-request", doc, &v); err != nil {
		return form, err
	}
	form.Billing = port.Billing{PricingVersion: v.PricingVersion, MaxCreditCost: v.MaxCreditCost}
	form.AIGenerated = v.AIGenerated
	return form, nil
}

// typed is a text part as the JSON value the schema checks: max_credit_cost as an integer when it is
// one written plainly (no sign, exponent or leading zero), ai_generated as a boolean when it is true or
// false; anything else stays a string, which the schema refuses with the part's pointer.
func typed(name, s string) any {
	switch name {
	case "max_credit_cost":
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(n, 10) == s {
			return n
		}
	case "ai_generated":
		switch s {
		case "true":
			return true
		case "false":
			return false
		}
	}
	return s
}

// invalid is a 422 for one member.
func invalid(pointer, code, message string) *problem.Problem {
	p := problem.New(problem.ValidationFailed, "The upload's form failed validation.")
	p.Errors = []problem.FieldError{{Pointer: pointer, Code: code, Message: message}}
	return p
}

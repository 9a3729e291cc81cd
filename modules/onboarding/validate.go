package onboarding

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/contracts/textpolicy"
)

// ApplicationRequest is an application, from the form or the API (application-request).
type ApplicationRequest struct {
	Handle           string `json:"handle"`
	OrganisationName string `json:"organisation_name"`
	Email            string `json:"email"`
	SetupScope       string `json:"setup_scope"`
	IntendedUse      string `json:"intended_use"`
}

// without returns the application with field (a member name) emptied.
func (in ApplicationRequest) without(field string) ApplicationRequest {
	switch field {
	case "handle":
		in.Handle = ""
	case "organisation_name":
		in.OrganisationName = ""
	case "email":
		in.Email = ""
	case "setup_scope":
		in.SetupScope = ""
	case "intended_use":
		in.IntendedUse = ""
	}
	return in
}

// fieldHelp is what a person is told beside a field the schema refuses: the schema's own messages
// are for programs.
var fieldHelp = map[string]string{
	"handle":            "Use 3 to 32 lowercase letters, digits, _ or -, starting with a letter or a digit.",
	"organisation_name": "Give the name of the organisation the agent belongs to, at most 200 characters.",
	"email":             "Give one mail address, like name@example.org: the confirmation link and the invitation are sent there.",
	"setup_scope":       "Choose forum, or forum_arena to also take part in arena matches.",
	"intended_use":      "Say in a few words (at most 2000 characters) what the agent will do on the forum.",
}

// validate checks an application against its published schema (the one source of its rules; the form
// is checked by the same schema as the API) and then the content policy of its texts, which a schema
// cannot say. It returns the refusal, with a reason per field by JSON pointer in words a person
// understands, or nil: 422 private_key_refused when a field holds a private key (the schema's
// x-private-key rules, before anything else), else 422 validation_failed.
func validate(schemas *schema.Set, in ApplicationRequest) *problem.Problem {
	raw, err := json.Marshal(in)
	if err != nil {
		return invalidApplication([]problem.FieldError{{Pointer: "", Code: "invalid", Message: "The application could not be read."}})
	}
	var errs []problem.FieldError
	seen := map[string]bool{}
	add := func(field, code, msg string) {
		if !seen[field] {
			seen[field] = true
			errs = append(errs, problem.FieldError{Pointer: "/" + field, Code: code, Message: msg})
		}
	}
	var se *schema.Error
	if err := schemas.Validate("application-request", raw); errors.As(err, &se) {
		if se.PrivateKey() {
			p := se.Problem()
			for i := range p.Errors {
				p.Errors[i].Message = keyHelp
			}
			return p
		}
		for _, fe := range se.Errors {
			field, _, _ := strings.Cut(strings.TrimPrefix(fe.Pointer, "/"), "/")
			if help, ok := fieldHelp[field]; ok {
				add(field, fe.Code, help)
			}
		}
	}
	// In the form's order, so that the same application is always answered the same errors.
	for _, text := range []struct {
		field, s  string
		multiline bool
	}{{"organisation_name", in.OrganisationName, false}, {"intended_use", in.IntendedUse, true}} {
		if reason, ok := textpolicy.Check(text.s, text.multiline); !ok && !seen[text.field] {
			add(text.field, "content_policy", "The text "+reason+".")
		}
	}
	if len(errs) > 0 {
		return invalidApplication(errs)
	}
	return nil
}

// keyHelp is what a person is told beside a field that held a private key, which is not kept.
const keyHelp = "This field held a private key, so it was not kept and is not shown again. Never give a private key to anyone, svc included, and make a new key: this one is no longer secret."

func invalidApplication(errs []problem.FieldError) *problem.Problem {
	p := problem.New(problem.ValidationFailed, "The application is not complete: see errors.")
	p.Errors = errs
	return p
}

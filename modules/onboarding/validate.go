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
// cannot say. It returns a reason per field, by JSON pointer, in words a person understands.
func validate(schemas *schema.Set, in ApplicationRequest) []problem.FieldError {
	raw, err := json.Marshal(in)
	if err != nil {
		return []problem.FieldError{{Pointer: "", Code: "invalid", Message: "The application could not be read."}}
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
	return errs
}

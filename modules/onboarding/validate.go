package onboarding

import (
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/svcforum/svc/contracts/problem"
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

// The bounds of an application's fields (application-request).
const (
	maxOrgName     = 200
	maxEmail       = 254
	maxIntendedUse = 2000
)

// handlePattern is sigv1's: 3 to 32 of a-z 0-9 _ -, starting with a letter or a digit.
var handlePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{2,31}$`)

// validate checks an application beyond what its schema says (the form is not decoded against the
// schema, so every rule is here too): each field's shape, the address as a bare mail address, and the
// content policy of the texts. It returns a reason per field, by JSON pointer.
func validate(in ApplicationRequest) []problem.FieldError {
	var errs []problem.FieldError
	add := func(field, code, msg string) {
		errs = append(errs, problem.FieldError{Pointer: "/" + field, Code: code, Message: msg})
	}
	if !handlePattern.MatchString(in.Handle) {
		add("handle", "pattern", "Use 3 to 32 lowercase letters, digits, _ or -, starting with a letter or a digit.")
	}
	switch n := utf8.RuneCountInString(in.OrganisationName); {
	case n == 0 || strings.TrimSpace(in.OrganisationName) == "":
		add("organisation_name", "required", "Give the name of the organisation the agent belongs to.")
	case n > maxOrgName:
		add("organisation_name", "maxLength", "Use at most 200 characters.")
	default:
		if reason, ok := textpolicy.Check(in.OrganisationName, false); !ok {
			add("organisation_name", "content_policy", "The name "+reason+".")
		}
	}
	if a, err := mail.ParseAddress(in.Email); in.Email == "" || len(in.Email) > maxEmail || err != nil || a.Address != in.Email || a.Name != "" ||
		!strings.Contains(in.Email[strings.LastIndexByte(in.Email, '@')+1:], ".") {
		add("email", "format", "Give one mail address, like name@example.org: the confirmation link and the invitation are sent there.")
	}
	if !slices.Contains(SetupScopes, in.SetupScope) {
		add("setup_scope", "enum", "Choose forum, or forum_arena to also take part in arena matches.")
	}
	switch n := utf8.RuneCountInString(in.IntendedUse); {
	case n == 0 || strings.TrimSpace(in.IntendedUse) == "":
		add("intended_use", "required", "Say in a few words what the agent will do on the forum.")
	case n > maxIntendedUse:
		add("intended_use", "maxLength", "Use at most 2000 characters.")
	default:
		if reason, ok := textpolicy.Check(in.IntendedUse, true); !ok {
			add("intended_use", "content_policy", "The text "+reason+".")
		}
	}
	return errs
}

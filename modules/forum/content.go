package forum

import (
	"fmt"
	"iter"

	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/textpolicy"
)

// The content policy: what every text of a post must be before it is stored. A private key anywhere
// in a post is 422 private_key_refused (keyIn, contracts/privatekey), checked first; then each text
// must pass contracts/textpolicy (400 content_policy_violation, checkPost, checkRecipe), naming the
// member and never quoting the text.

// checkPost applies the content policy (400 content_policy_violation) to a post's text, after keyIn.
func checkPost(title *string, body string, declaredModel *string) *problem.Problem {
	if title != nil {
		if p := policy("/title", *title, false); p != nil {
			return p
		}
	}
	if p := policy("/body_markdown", body, true); p != nil {
		return p
	}
	if declaredModel != nil {
		return policy("/declared_model", *declaredModel, false)
	}
	return nil
}

// policy refuses text that breaks the content policy (400), naming the member. Its callers run after
// the post's keyIn, which looked for private keys in every text already.
func policy(pointer, s string, multiline bool) *problem.Problem {
	if reason, ok := textpolicy.Check(s, multiline); !ok {
		return problem.Newf(problem.ContentPolicyViolation, "%s %s.", pointer, reason).With("pointer", pointer)
	}
	return nil
}

// checkRecipe checks what the recipe's schema cannot: positions unique in each list, one quantity per
// serving count 1..4 for each ingredient (422), the content policy of its texts (400), and that every
// source URL is a safe public HTTPS URL (422), which it rewrites to the form that is stored.
func checkRecipe(r *Recipe) *problem.Problem {
	if p := unique("/recipe/ingredients", len(r.Ingredients), func(i int) int { return r.Ingredients[i].Position }); p != nil {
		return p
	}
	if p := unique("/recipe/steps", len(r.Steps), func(i int) int { return r.Steps[i].Position }); p != nil {
		return p
	}
	if p := unique("/recipe/tips", len(r.Tips), func(i int) int { return r.Tips[i].Position }); p != nil {
		return p
	}
	if p := unique("/recipe/sources", len(r.Sources), func(i int) int { return r.Sources[i].Position }); p != nil {
		return p
	}
	texts := []struct {
		pointer   string
		s         *string
		multiline bool
	}{{"/recipe/description", &r.Description, true}, {"/recipe/country_or_region", r.CountryOrRegion, false},
		{"/recipe/recipe_cuisine", r.RecipeCuisine, false}, {"/recipe/recipe_category", r.RecipeCategory, false}}
	for i := range r.Keywords {
		texts = append(texts, struct {
			pointer   string
			s         *string
			multiline bool
		}{fmt.Sprintf("/recipe/keywords/%d", i), &r.Keywords[i], false})
	}
	for _, t := range texts {
		if t.s != nil {
			if p := policy(t.pointer, *t.s, t.multiline); p != nil {
				return p
			}
		}
	}
	for i, in := range r.Ingredients {
		at := fmt.Sprintf("/recipe/ingredients/%d", i)
		seen := map[int]bool{}
		for _, q := range in.Quantities {
			seen[q.Servings] = true
		}
		if len(seen) != 4 {
			return invalid(at+"/quantities", "servings", "give one quantity for each serving count 1, 2, 3 and 4")
		}
		if p := policy(at+"/name", in.Name, false); p != nil {
			return p
		}
		if in.Note != nil {
			if p := policy(at+"/note", *in.Note, true); p != nil {
				return p
			}
		}
		for j, q := range in.Quantities {
			if p := policy(fmt.Sprintf("%s/quantities/%d/display_text", at, j), q.DisplayText, false); p != nil {
				return p
			}
		}
	}
	for i, s := range r.Steps {
		if s.Name != nil {
			if p := policy(fmt.Sprintf("/recipe/steps/%d/name", i), *s.Name, false); p != nil {
				return p
			}
		}
		if p := policy(fmt.Sprintf("/recipe/steps/%d/instruction", i), s.Instruction, true); p != nil {
			return p
		}
	}
	for i, t := range r.Tips {
		if p := policy(fmt.Sprintf("/recipe/tips/%d/text", i), t.Text, true); p != nil {
			return p
		}
	}
	for i := range r.Sources {
		at := fmt.Sprintf("/recipe/sources/%d", i)
		if p := policy(at+"/label", r.Sources[i].Label, false); p != nil {
			return p
		}
		safe, err := SafePublicHTTPSURL(r.Sources[i].URL)
		if err != nil {
			return invalid(at+"/url", "safe_public_https_url", err.Error())
		}
		r.Sources[i].URL = safe
	}
	return nil
}

// unique refuses a list whose positions repeat.
func unique(pointer string, n int, position func(i int) int) *problem.Problem {
	seen := map[int]bool{}
	for i := range n {
		if seen[position(i)] {
			return invalid(fmt.Sprintf("%s/%d/position", pointer, i), "unique", "positions must be unique in the list")
		}
		seen[position(i)] = true
	}
	return nil
}

// post is what an agent writes in a post, for the checks that read all of it.
type post struct {
	title, body, model *string
	attachments        []AttachmentInput
	recipe             *Recipe
}

// texts yields every text of the post with its JSON pointer: the title, body and declared model, the
// attachments' alt texts and captions, and every text of the recipe.
func (p post) texts() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, t := range []struct {
			pointer string
			s       *string
		}{{"/title", p.title}, {"/body_markdown", p.body}, {"/declared_model", p.model}} {
			if t.s != nil && !yield(t.pointer, *t.s) {
				return
			}
		}
		for i, a := range p.attachments {
			at := fmt.Sprintf("/attachments/%d", i)
			if !yield(at+"/alt_text", a.AltText) || (a.Caption != nil && !yield(at+"/caption", *a.Caption)) {
				return
			}
		}
		if p.recipe != nil {
			for pointer, s := range p.recipe.texts() {
				if !yield(pointer, s) {
					return
				}
			}
		}
	}
}

// keyIn refuses a post that holds a private key in any of its texts (422 private_key_refused), before
// any other check of them, as the operations document it: the agent learns at once that its key is
// exposed, whatever else is wrong with the post.
func (p post) keyIn() *problem.Problem {
	for pointer, s := range p.texts() {
		if privatekey.In(s) {
			return keyRefused(pointer)
		}
	}
	return nil
}

func keyRefused(pointer string) *problem.Problem {
	return problem.Newf(problem.PrivateKeyRefused, "%s holds a private key. Private keys are never accepted, in any form or place: remove it (and treat it as exposed: make a new one).", pointer).With("pointer", pointer)
}

// texts yields every text the recipe's author wrote, as written, with its JSON pointer under /recipe:
// its source URLs too.
func (r *Recipe) texts() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		emit := func(pointer string, s *string) bool { return s == nil || yield("/recipe"+pointer, *s) }
		if !emit("/description", &r.Description) || !emit("/country_or_region", r.CountryOrRegion) ||
			!emit("/recipe_cuisine", r.RecipeCuisine) || !emit("/recipe_category", r.RecipeCategory) {
			return
		}
		for i := range r.Keywords {
			if !emit(fmt.Sprintf("/keywords/%d", i), &r.Keywords[i]) {
				return
			}
		}
		for i, in := range r.Ingredients {
			at := fmt.Sprintf("/ingredients/%d", i)
			if !emit(at+"/name", &in.Name) || !emit(at+"/note", in.Note) {
				return
			}
			for j := range in.Quantities {
				if !emit(fmt.Sprintf("%s/quantities/%d/display_text", at, j), &in.Quantities[j].DisplayText) {
					return
				}
			}
		}
		for i, st := range r.Steps {
			if !emit(fmt.Sprintf("/steps/%d/name", i), st.Name) || !emit(fmt.Sprintf("/steps/%d/instruction", i), &st.Instruction) {
				return
			}
		}
		for i, tip := range r.Tips {
			if !emit(fmt.Sprintf("/tips/%d/text", i), &tip.Text) {
				return
			}
		}
		for i, src := range r.Sources {
			if !emit(fmt.Sprintf("/sources/%d/label", i), &src.Label) || !emit(fmt.Sprintf("/sources/%d/url", i), &src.URL) {
				return
			}
		}
	}
}

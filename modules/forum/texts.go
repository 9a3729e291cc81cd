package forum

import (
	"fmt"
	"iter"

	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
)

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

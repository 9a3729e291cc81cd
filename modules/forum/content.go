package forum

import (
	"fmt"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/textpolicy"
)

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

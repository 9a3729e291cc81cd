package forum

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// recipeCard is a recipe as the thread page shows it: in position order, quantities for the default
// servings and a table of all four, and its schema.org Recipe JSON-LD.
type recipeCard struct {
	Recipe
	Name        string
	Default     []ingredientLine
	Table       []ingredientLine
	SourceLinks []sourceLink
	JSONLD      template.JS
}

// ingredientLine is an ingredient with its quantity for the default servings (Quantity) and for each
// of 1..4 servings (PerServings).
type ingredientLine struct {
	Name        string
	Note        string
	Quantity    string
	PerServings [4]string
}

// sourceLink is a source; Href is empty when the URL is not an absolute http(s) URL (the write path
// allows only public HTTPS, so that never happens to stored recipes), and the URL is shown as text.
type sourceLink struct {
	Label string
	URL   string
	Href  string
}

func newRecipeCard(t Thread, rec Recipe) (*recipeCard, error) {
	rec.Ingredients = slices.Clone(rec.Ingredients)
	slices.SortStableFunc(rec.Ingredients, func(a, b Ingredient) int { return cmp.Compare(a.Position, b.Position) })
	rec.Steps = slices.Clone(rec.Steps)
	slices.SortStableFunc(rec.Steps, func(a, b Step) int { return cmp.Compare(a.Position, b.Position) })
	rec.Tips = slices.Clone(rec.Tips)
	slices.SortStableFunc(rec.Tips, func(a, b Tip) int { return cmp.Compare(a.Position, b.Position) })
	rec.Sources = slices.Clone(rec.Sources)
	slices.SortStableFunc(rec.Sources, func(a, b Source) int { return cmp.Compare(a.Position, b.Position) })

	card := &recipeCard{Recipe: rec, Name: titleText(t)}
	for _, ing := range rec.Ingredients {
		line := ingredientLine{Name: ing.Name}
		if ing.Note != nil {
			line.Note = *ing.Note
		}
		for _, q := range ing.Quantities {
			if q.Servings >= 1 && q.Servings <= 4 {
				line.PerServings[q.Servings-1] = q.DisplayText
			}
		}
		if rec.DefaultServings >= 1 && rec.DefaultServings <= 4 {
			line.Quantity = line.PerServings[rec.DefaultServings-1]
		}
		card.Default = append(card.Default, line)
		card.Table = append(card.Table, line)
	}
	for _, s := range rec.Sources {
		link := sourceLink{Label: s.Label, URL: s.URL}
		if u, err := url.Parse(s.URL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			link.Href = u.String()
		}
		card.SourceLinks = append(card.SourceLinks, link)
	}
	ld, err := recipeJSONLD(t, card)
	if err != nil {
		return nil, err
	}
	card.JSONLD = ld
	return card, nil
}

// recipeJSONLD is the schema.org Recipe of a card, for a <script type="application/ld+json"> block.
// It is data, never script: encoding/json writes "<", ">" and "&" as \u003c, \u003e and \u0026 (and
// U+2028, U+2029 escaped), so no agent text can close the block or open another.
func recipeJSONLD(t Thread, card *recipeCard) (template.JS, error) {
	type howTo struct {
		Type string `json:"@type"`
		Name string `json:"name,omitempty"`
		Text string `json:"text"`
	}
	type place struct {
		Type string `json:"@type"`
		Name string `json:"name"`
	}
	ld := struct {
		Context            string   `json:"@context"`
		Type               string   `json:"@type"`
		Name               string   `json:"name"`
		Description        string   `json:"description"`
		DatePublished      string   `json:"datePublished"`
		RecipeCuisine      string   `json:"recipeCuisine,omitempty"`
		RecipeCategory     string   `json:"recipeCategory,omitempty"`
		CountryOfOrigin    *place   `json:"countryOfOrigin,omitempty"`
		Keywords           string   `json:"keywords,omitempty"`
		PrepTime           string   `json:"prepTime"`
		CookTime           string   `json:"cookTime"`
		TotalTime          string   `json:"totalTime"`
		RecipeYield        string   `json:"recipeYield"`
		RecipeIngredient   []string `json:"recipeIngredient"`
		RecipeInstructions []howTo  `json:"recipeInstructions"`
		IsBasedOn          []string `json:"isBasedOn,omitempty"`
	}{
		Context: "https://schema.org", Type: "Recipe", Name: card.Name, Description: card.Description,
		DatePublished: t.CreatedAt.UTC().Format(time.RFC3339),
		PrepTime:      isoMinutes(card.PrepTimeMinutes), CookTime: isoMinutes(card.CookTimeMinutes),
		TotalTime:   isoMinutes(card.TotalTimeMinutes),
		RecipeYield: fmt.Sprintf("%d %s", card.DefaultServings, plural(card.DefaultServings, "serving", "servings")),
		Keywords:    strings.Join(card.Keywords, ", "),
	}
	if card.RecipeCuisine != nil {
		ld.RecipeCuisine = *card.RecipeCuisine
	}
	if card.RecipeCategory != nil {
		ld.RecipeCategory = *card.RecipeCategory
	}
	if card.CountryOrRegion != nil {
		ld.CountryOfOrigin = &place{Type: "Country", Name: *card.CountryOrRegion}
	}
	for _, line := range card.Default {
		ld.RecipeIngredient = append(ld.RecipeIngredient, strings.TrimSpace(line.Quantity+" "+line.Name))
	}
	for _, s := range card.Steps {
		step := howTo{Type: "HowToStep", Text: s.Instruction}
		if s.Name != nil {
			step.Name = *s.Name
		}
		ld.RecipeInstructions = append(ld.RecipeInstructions, step)
	}
	for _, s := range card.SourceLinks {
		if s.Href != "" {
			ld.IsBasedOn = append(ld.IsBasedOn, s.Href)
		}
	}
	b, err := json.Marshal(ld) // HTML-escapes by default; never SetEscapeHTML(false) here
	if err != nil {
		return "", fmt.Errorf("encode recipe JSON-LD: %w", err)
	}
	if bytes.ContainsAny(b, "<>&") {
		return "", errors.New("encode recipe JSON-LD: markup left unescaped")
	}
	return template.JS(b), nil
}

// isoMinutes is an ISO 8601 duration: PT1H30M.
func isoMinutes(m int) string {
	if m <= 0 {
		return "PT0M"
	}
	s := "PT"
	if m >= 60 {
		s += strconv.Itoa(m/60) + "H"
	}
	if m%60 != 0 {
		s += strconv.Itoa(m%60) + "M"
	}
	return s
}

// minutesText is a duration for people: "1 h 30 min".
func minutesText(m int) string {
	switch {
	case m < 60:
		return fmt.Sprintf("%d min", m)
	case m%60 == 0:
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

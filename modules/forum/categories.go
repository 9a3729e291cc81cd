package forum

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/textpolicy"
)

// Categories keeps the categories; the operator drives it through `svc admin category`.
type Categories struct {
	db      *gorm.DB
	clock   port.Clock
	version *ContentVersion // told of every change that commits; nil without a read cache
}

// Notify makes cs tell v of every change it commits, so that this process's read cache drops at once
// what the change made stale (other replicas learn it from the notification).
func (cs *Categories) Notify(v *ContentVersion) { cs.version = v }

// NewCategories returns the categories on db.
func NewCategories(db *gorm.DB, clock port.Clock) *Categories {
	return &Categories{db: db, clock: clock}
}

// slugPattern: 2 to 64 of lowercase ASCII letters, digits and "-", starting with a letter or digit.
var slugPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,63}$`)

// CategoryChange is what `category update` sets; nil members stay as they are.
type CategoryChange struct {
	Name        *string
	Description *string
	State       *string
}

// Create registers an open category.
func (cs *Categories) Create(ctx context.Context, slug, name, description string) (Category, error) {
	if !slugPattern.MatchString(slug) {
		return Category{}, problem.New(problem.ValidationFailed, "the slug must be 2 to 64 of a-z 0-9 -, starting with a letter or a digit")
	}
	if err := checkCategoryText(name, description); err != nil {
		return Category{}, err
	}
	now := cs.clock.Now().UTC().Truncate(time.Microsecond)
	row := categoryRow{ID: uuid.Must(uuid.NewV7()).String(), Slug: slug, Name: name, Description: description,
		State: CategoryOpen, CreatedAt: now, UpdatedAt: now}
	if err := cs.db.WithContext(ctx).Create(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return Category{}, problem.Newf(problem.Conflict, "the slug %q is taken", slug)
		}
		return Category{}, fmt.Errorf("create category: %w", err)
	}
	cs.version.Changed()
	return categoryView(row), nil
}

// categoryBySlug reads the category with slug. A slug no category can have (slugPattern) is
// gorm.ErrRecordNotFound without a query: a NUL byte or invalid UTF-8 in an address would be an error
// on PostgreSQL, not a miss.
func categoryBySlug(db *gorm.DB, slug string) (categoryRow, error) {
	var row categoryRow
	if !slugPattern.MatchString(slug) {
		return row, gorm.ErrRecordNotFound
	}
	return row, db.Where("slug = ?", slug).Take(&row).Error
}

// Update changes a category's name, description or state.
func (cs *Categories) Update(ctx context.Context, slug string, ch CategoryChange) (Category, error) {
	db := cs.db.WithContext(ctx)
	row, err := categoryBySlug(db, slug)
	if err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return Category{}, problem.Newf(problem.NotFound, "no category has the slug %q", slug)
		}
		return Category{}, fmt.Errorf("find category: %w", err)
	}
	if ch.Name != nil {
		row.Name = *ch.Name
	}
	if ch.Description != nil {
		row.Description = *ch.Description
	}
	if ch.State != nil {
		if !slices.Contains([]string{CategoryOpen, CategoryLocked, CategoryArchived}, *ch.State) {
			return Category{}, problem.Newf(problem.ValidationFailed, "the state must be %s, %s or %s", CategoryOpen, CategoryLocked, CategoryArchived)
		}
		row.State = *ch.State
	}
	if err := checkCategoryText(row.Name, row.Description); err != nil {
		return Category{}, err
	}
	row.UpdatedAt = cs.clock.Now().UTC().Truncate(time.Microsecond)
	if err := db.Model(&row).Select("name", "description", "state", "updated_at").Updates(&row).Error; err != nil {
		return Category{}, fmt.Errorf("update category: %w", err)
	}
	cs.version.Changed()
	return categoryView(row), nil
}

func checkCategoryText(name, description string) error {
	if n := len([]rune(name)); n < 1 || n > 100 {
		return problem.New(problem.ValidationFailed, "the name must be 1 to 100 characters")
	}
	if reason, ok := textpolicy.Check(name, false); !ok {
		return problem.New(problem.ValidationFailed, "the name "+reason)
	}
	if len([]rune(description)) > 1000 {
		return problem.New(problem.ValidationFailed, "the description must be at most 1000 characters")
	}
	if reason, ok := textpolicy.Check(description, true); !ok {
		return problem.New(problem.ValidationFailed, "the description "+reason)
	}
	return nil
}

func categoryView(r categoryRow) Category {
	return Category{ID: r.ID, Slug: r.Slug, Name: r.Name, Description: r.Description, State: r.State,
		ThreadCount: r.ThreadCount, CreatedAt: r.CreatedAt.UTC()}
}

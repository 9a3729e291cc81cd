package host

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/modules/billing"
	"github.com/svcforum/svc/modules/discovery"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/modules/media"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/modules/releases"
	"github.com/svcforum/svc/modules/reports"
	"github.com/svcforum/svc/modules/sigv1"
)

// Catalog lists every module built into this binary. Adding a module means adding its descriptor here
// (the one place that names every module) and a require in host/go.mod.
func Catalog() []plugin.Descriptor {
	return []plugin.Descriptor{
		arena.Descriptor(),
		billing.Descriptor(),
		discovery.Descriptor(),
		forum.Descriptor(),
		media.Descriptor(),
		onboarding.Descriptor(),
		releases.Descriptor(),
		reports.Descriptor(),
		sigv1.Descriptor(),
	}
}

// Profiles are the documented deployments; each is checked with fx.ValidateApp in the tests.
func Profiles() map[string][]string {
	return map[string][]string{
		"all":        IDs(Catalog()),
		"discovery":  {discovery.ID},
		"signed":     {discovery.ID, sigv1.ID},
		"metered":    {billing.ID, discovery.ID, sigv1.ID},
		"forum":      {billing.ID, discovery.ID, forum.ID, sigv1.ID},
		"media":      {billing.ID, discovery.ID, media.ID, sigv1.ID},
		"onboarding": {discovery.ID, onboarding.ID, sigv1.ID},
		"arena":      {arena.ID, discovery.ID, sigv1.ID},
	}
}

// IDs returns the IDs of descriptors, sorted.
func IDs(ds []plugin.Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	slices.Sort(out)
	return out
}

// Select returns the descriptors named by ids (every one when ids is empty), sorted by ID. An unknown
// or repeated ID, or a module whose required neighbour is not selected, is an error of one line.
func Select(catalog []plugin.Descriptor, ids []string) ([]plugin.Descriptor, error) {
	byID := make(map[string]plugin.Descriptor, len(catalog))
	for _, d := range catalog {
		if _, dup := byID[d.ID]; dup {
			return nil, fmt.Errorf("module %q is registered twice", d.ID)
		}
		byID[d.ID] = d
	}
	if len(ids) == 0 {
		ids = IDs(catalog)
	}
	chosen := make([]plugin.Descriptor, 0, len(ids))
	seen := map[string]bool{}
	for _, id := range ids {
		d, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("unknown module %q in SVC_MODULES (known: %s)", id, strings.Join(IDs(catalog), ", "))
		}
		if seen[id] {
			return nil, fmt.Errorf("module %q is named twice in SVC_MODULES", id)
		}
		seen[id] = true
		chosen = append(chosen, d)
	}
	for _, d := range chosen {
		for _, req := range d.Requires {
			if !seen[req] {
				return nil, fmt.Errorf("module %q requires module %q, which is not enabled in SVC_MODULES", d.ID, req)
			}
		}
	}
	slices.SortFunc(chosen, func(a, b plugin.Descriptor) int { return strings.Compare(a.ID, b.ID) })
	return chosen, nil
}

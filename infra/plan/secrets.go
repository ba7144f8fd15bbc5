package plan

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/stepline/stepline/shared/secret"
)

// Secrets resolves the ${NAME} references the pipelines use through
// mapping (NAME → "secretsmanager:<name-or-arn>[#key]" or
// "ssm:<parameter>[#key]"). It returns the references of the names in use
// only, so that the functions can read exactly those. A name in use without
// a mapping, or a mapping that does not parse, is an error naming it and
// the pipelines that use it. A default secret (Pipeline.DefaultSecrets) is
// in use when the mapping has it; without one, the steps send none.
func Secrets(ps []*Pipeline, mapping map[string]string) (map[string]secret.Ref, error) {
	users := map[string][]string{}
	for _, p := range ps {
		for _, n := range p.Secrets {
			users[n] = append(users[n], p.Name)
		}
		for _, n := range p.DefaultSecrets {
			if _, mapped := mapping[n]; mapped && !slices.Contains(users[n], p.Name) {
				users[n] = append(users[n], p.Name)
			}
		}
	}
	names := make([]string, 0, len(users))
	for n := range users {
		names = append(names, n)
	}
	sort.Strings(names)
	refs := map[string]secret.Ref{}
	var errs []error
	for _, n := range names {
		raw, ok := mapping[n]
		if !ok {
			errs = append(errs, fmt.Errorf("secret %q (used by %s) has no mapping: add it to the stepline:secrets context, e.g. %q: \"secretsmanager:stepline/%s\"",
				n, strings.Join(users[n], ", "), n, n))
			continue
		}
		ref, err := secret.ParseRef(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("secret %q (used by %s): %w", n, strings.Join(users[n], ", "), err))
			continue
		}
		if strings.ContainsAny(ref.String(), ",\n") {
			errs = append(errs, fmt.Errorf("secret %q: reference %q may not hold ',' or a line break", n, raw))
			continue
		}
		refs[n] = ref
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return refs, nil
}

// RefsEnv writes refs in the form secret.ParseRefs reads (NAME=ref, sorted
// by name, comma-separated): the SECRET_REFS environment variable.
func RefsEnv(refs map[string]secret.Ref) string {
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + refs[n].String()
	}
	return strings.Join(parts, ",")
}

package executor

import "github.com/stepline/stepline/shared/internal/origin"

// MaxRedirects is how many redirects one executor request follows, all
// within its origin (package doc, "Redirects").
const MaxRedirects = origin.MaxRedirects

package steprun

import "github.com/stepline/stepline/shared/executor"

// The executors' registry is what the step functions and the CLI pass as
// Executors and Agents; the package itself does not import it (so that the
// approval function, which runs no executor, does not link it).
var (
	_ Providers = (*executor.Registry)(nil)
	_ Agents    = (*executor.Registry)(nil)
)

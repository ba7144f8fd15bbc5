package compiler

import "github.com/stepline/stepline/shared/cron"

// CheckCron validates a five-field cron expression (minute hour
// day-of-month month day-of-week): each field is *, a value, a range a-b, a
// list, or a step (*/n, a-b/n); months and weekdays may be names.
func CheckCron(expr string) error {
	_, err := cron.Parse(expr)
	return err
}

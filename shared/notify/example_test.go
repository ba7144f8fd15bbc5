package notify_test

import (
	"fmt"

	"github.com/stepline/stepline/shared/notify"
)

func ExampleAction() {
	fmt.Println(notify.Action("failed", "page-oncall"))
	fmt.Println(notify.Action("aborted", "page-oncall"))
	fmt.Println(notify.Action("stopped", ""))
	fmt.Println(notify.Action(notify.StatusBudget, ""))
	// Output:
	// escalate
	// page-oncall
	// stopped
	// notify
}

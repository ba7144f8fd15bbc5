package sqlite_test

import (
	"testing"

	"github.com/stepline/stepline/shared/store/storetest"
)

func TestApprovalListConformance(t *testing.T) {
	storetest.RunApprovalLists(t, func(t *testing.T) storetest.ApprovalLister {
		s, _ := openTemp(t)
		return s
	})
}

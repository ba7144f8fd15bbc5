package sqlite_test

import (
	"testing"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/storetest"
)

func TestFeedbackConformance(t *testing.T) {
	storetest.RunFeedback(t, func(t *testing.T) store.Store {
		s, _ := openTemp(t)
		return s
	})
}

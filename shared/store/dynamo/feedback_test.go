package dynamo_test

import (
	"testing"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/store/storetest"
)

func TestFeedbackConformance(t *testing.T) {
	c := dynamotest.Client(t)
	storetest.RunFeedback(t, func(t *testing.T) store.Store {
		return dynamo.New(c, dynamotest.NewTable(t))
	})
}

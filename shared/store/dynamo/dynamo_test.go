package dynamo_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/dynamo"
	"github.com/stepline/stepline/shared/store/dynamo/dynamotest"
	"github.com/stepline/stepline/shared/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dynamotest.Stop()
	os.Exit(code)
}

func TestConformance(t *testing.T) {
	c := dynamotest.Client(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return dynamo.New(c, dynamotest.NewTable(t))
	})
}

// counter counts the requests the store sends, by operation, and the write
// capacity they consume on the table's indexes (DynamoDB Local reports it).
type counter struct {
	dynamo.API
	mu       sync.Mutex
	calls    map[string]int
	indexWCU float64
}

func (c *counter) count(op string, cc *dynamo.ConsumedCapacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[op]++
	if cc != nil {
		for _, g := range cc.GlobalSecondaryIndexes {
			c.indexWCU += g.CapacityUnits
		}
	}
}

func (c *counter) take() (map[string]int, float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, wcu := c.calls, c.indexWCU
	c.calls, c.indexWCU = map[string]int{}, 0
	return calls, wcu
}

func (c *counter) PutItem(ctx context.Context, in *dynamo.PutItemInput) (*dynamo.PutItemOutput, error) {
	in.ReturnConsumedCapacity = "INDEXES"
	out, err := c.API.PutItem(ctx, in)
	var cc *dynamo.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	c.count("PutItem", cc)
	return out, err
}

func (c *counter) UpdateItem(ctx context.Context, in *dynamo.UpdateItemInput) (*dynamo.UpdateItemOutput, error) {
	in.ReturnConsumedCapacity = "INDEXES"
	out, err := c.API.UpdateItem(ctx, in)
	var cc *dynamo.ConsumedCapacity
	if out != nil {
		cc = out.ConsumedCapacity
	}
	c.count("UpdateItem", cc)
	return out, err
}

func (c *counter) GetItem(ctx context.Context, in *dynamo.GetItemInput) (*dynamo.GetItemOutput, error) {
	c.count("GetItem", nil)
	return c.API.GetItem(ctx, in)
}

func (c *counter) Query(ctx context.Context, in *dynamo.QueryInput) (*dynamo.QueryOutput, error) {
	c.count("Query", nil)
	return c.API.Query(ctx, in)
}

// TestRequestsPerStep pins the cost of recording a step: one PutItem for the
// record and one UpdateItem for the run's usage, neither writing to an index
// — also when a retried Lambda repeats both.
func TestRequestsPerStep(t *testing.T) {
	c := dynamotest.Client(t)
	api := &counter{API: c, calls: map[string]int{}}
	s := dynamo.New(api, dynamotest.NewTable(t))
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.CreateRun(ctx, store.Run{ID: "r1", Pipeline: "p", Status: store.RunRunning, StartedAt: now,
		Trigger: json.RawMessage(`{"summary":"disk full"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, wcu := api.take(); wcu != 2 {
		t.Errorf("creating a run wrote %v index units, want 2 (one per index)", wcu)
	}
	rec := store.StepRecord{RunID: "r1", Name: "diagnose", Attempt: 1, Status: store.StepCompleted,
		Output:      json.RawMessage(`{"confidence":0.9,"summary":"ok","next_step_context":""}`),
		InputTokens: 100, OutputTokens: 20, CostUSD: ptr(0.01), StartedAt: now, FinishedAt: now.Add(time.Second), DurationMS: 1000}
	usage := store.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: ptr(0.01)}

	tests := []struct {
		name string
		want map[string]int
	}{
		{"first write", map[string]int{"PutItem": 1, "UpdateItem": 1}},
		// The retry's usage update fails its condition and reads the
		// run's status once to tell a repeat from a missing run.
		{"retried write", map[string]int{"PutItem": 1, "UpdateItem": 1, "GetItem": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := s.PutStep(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if err := s.AddUsage(ctx, "r1", "diagnose#1", usage); err != nil {
				t.Fatal(err)
			}
			calls, wcu := api.take()
			if !maps.Equal(calls, tt.want) {
				t.Errorf("requests = %v, want %v", calls, tt.want)
			}
			if wcu != 0 {
				t.Errorf("recording a step wrote %v index units, want 0", wcu)
			}
		})
	}
	r, err := s.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Usage.InputTokens != 100 || r.Usage.CostUSD == nil || *r.Usage.CostUSD != 0.01 {
		t.Errorf("usage after a retried step = %+v, want counted once", r.Usage)
	}
}

func ptr[T any](v T) *T { return &v }

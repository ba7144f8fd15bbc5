package inbound_test

import (
	"fmt"
	"time"

	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/pipeline"
)

func ExampleRouter_Route() {
	orders := &pipeline.Pipeline{Name: "order-intake", Stage: pipeline.StageProduction, Trigger: &pipeline.Trigger{
		Match: []pipeline.Match{
			{Field: "source", Op: "eq", Value: "generic"},
			{Field: "event", Op: "in", Value: []any{"order.created", "order.amended"}},
		},
	}}
	r, err := inbound.NewRouter([]*pipeline.Pipeline{orders})
	if err != nil {
		panic(err)
	}
	c, err := inbound.NormalizeGeneric([]byte(`{"event": "order.created", "idempotency_key": "order-1042", "data": {"order_id": "1042"}}`), time.Now())
	if err != nil {
		panic(err)
	}
	p, err := r.Route(c)
	fmt.Println(p.Name, c.Fingerprint, err)

	_, err = r.Route(inbound.Context{Source: "alertmanager"})
	fmt.Println(inbound.HTTPStatus(err), err)
	// Output:
	// order-intake order-1042 <nil>
	// 422 route event: no pipeline matched (source "alertmanager", severity "")
}

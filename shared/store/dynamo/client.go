package dynamo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stepline/stepline/shared/awsrest"
)

// The requests and answers of the four operations the store uses, with
// the member names of DynamoDB's API (version 2012-08-10). Only the
// members the store sets are declared.

// PutItemInput is a PutItem request.
type PutItemInput struct {
	TableName                           string            `json:"TableName"`
	Item                                Item              `json:"Item"`
	ConditionExpression                 string            `json:"ConditionExpression,omitempty"`
	ExpressionAttributeNames            map[string]string `json:"ExpressionAttributeNames,omitempty"`
	ExpressionAttributeValues           Item              `json:"ExpressionAttributeValues,omitempty"`
	ReturnValuesOnConditionCheckFailure string            `json:"ReturnValuesOnConditionCheckFailure,omitempty"`
	ReturnConsumedCapacity              string            `json:"ReturnConsumedCapacity,omitempty"`
}

// PutItemOutput is a PutItem answer.
type PutItemOutput struct {
	ConsumedCapacity *ConsumedCapacity `json:"ConsumedCapacity"`
}

// GetItemInput is a GetItem request.
type GetItemInput struct {
	TableName                string            `json:"TableName"`
	Key                      Item              `json:"Key"`
	ConsistentRead           bool              `json:"ConsistentRead,omitempty"`
	ProjectionExpression     string            `json:"ProjectionExpression,omitempty"`
	ExpressionAttributeNames map[string]string `json:"ExpressionAttributeNames,omitempty"`
}

// GetItemOutput is a GetItem answer; Item is nil when there is no such
// item.
type GetItemOutput struct {
	Item Item `json:"Item"`
}

// UpdateItemInput is an UpdateItem request.
type UpdateItemInput struct {
	TableName                           string            `json:"TableName"`
	Key                                 Item              `json:"Key"`
	UpdateExpression                    string            `json:"UpdateExpression,omitempty"`
	ConditionExpression                 string            `json:"ConditionExpression,omitempty"`
	ExpressionAttributeNames            map[string]string `json:"ExpressionAttributeNames,omitempty"`
	ExpressionAttributeValues           Item              `json:"ExpressionAttributeValues,omitempty"`
	ReturnValues                        string            `json:"ReturnValues,omitempty"`
	ReturnValuesOnConditionCheckFailure string            `json:"ReturnValuesOnConditionCheckFailure,omitempty"`
	ReturnConsumedCapacity              string            `json:"ReturnConsumedCapacity,omitempty"`
}

// UpdateItemOutput is an UpdateItem answer.
type UpdateItemOutput struct {
	Attributes       Item              `json:"Attributes"`
	ConsumedCapacity *ConsumedCapacity `json:"ConsumedCapacity"`
}

// QueryInput is a Query request. ScanIndexForward is a pointer because
// DynamoDB's default (true, ascending) differs from Go's zero value.
type QueryInput struct {
	TableName                 string            `json:"TableName"`
	IndexName                 string            `json:"IndexName,omitempty"`
	KeyConditionExpression    string            `json:"KeyConditionExpression"`
	FilterExpression          string            `json:"FilterExpression,omitempty"`
	ExpressionAttributeNames  map[string]string `json:"ExpressionAttributeNames,omitempty"`
	ExpressionAttributeValues Item              `json:"ExpressionAttributeValues,omitempty"`
	ConsistentRead            bool              `json:"ConsistentRead,omitempty"`
	ScanIndexForward          *bool             `json:"ScanIndexForward,omitempty"`
	Limit                     int32             `json:"Limit,omitempty"`
	ExclusiveStartKey         Item              `json:"ExclusiveStartKey,omitempty"`
}

// QueryOutput is one page of a Query's answer; LastEvaluatedKey is set
// when there may be more.
type QueryOutput struct {
	Items            []Item `json:"Items"`
	LastEvaluatedKey Item   `json:"LastEvaluatedKey"`
}

// ConsumedCapacity is the capacity an operation consumed, when the
// request asked for it (ReturnConsumedCapacity "INDEXES" or "TOTAL").
type ConsumedCapacity struct {
	TableName              string              `json:"TableName"`
	CapacityUnits          float64             `json:"CapacityUnits"`
	GlobalSecondaryIndexes map[string]Capacity `json:"GlobalSecondaryIndexes"`
}

// Capacity is the capacity consumed on one index.
type Capacity struct {
	CapacityUnits float64 `json:"CapacityUnits"`
}

// Values of ReturnValues and ReturnValuesOnConditionCheckFailure.
const (
	ReturnAllNew = "ALL_NEW"
	ReturnAllOld = "ALL_OLD"
)

// ConditionFailedError is DynamoDB's ConditionalCheckFailedException.
// Item is the item as it stood when the request asked for it
// (ReturnValuesOnConditionCheckFailure ALL_OLD) and one existed.
type ConditionFailedError struct {
	Item Item
	Err  *awsrest.ResponseError
}

func (e *ConditionFailedError) Error() string { return e.Err.Error() }
func (e *ConditionFailedError) Unwrap() error { return e.Err }

// Client calls DynamoDB's JSON protocol directly: each operation is a
// signed POST whose X-Amz-Target names it. The store needs four
// operations and plain JSON, which this does without the SDK's service
// package, whose initialisers cost a Lambda's cold start more than half a
// millisecond. Safe for concurrent use.
type Client struct{ c *awsrest.Client }

var _ API = (*Client)(nil)

// NewClient returns a client configured from cfg as awsrest.New configures
// one: the endpoint is AWS_ENDPOINT_URL_DYNAMODB (or AWS_ENDPOINT_URL) when
// set, else https://dynamodb.<region>.amazonaws.com.
func NewClient(cfg aws.Config) (*Client, error) {
	c, err := awsrest.New(cfg, awsrest.Service{SDKID: "DynamoDB", SigningName: "dynamodb", EndpointPrefix: "dynamodb"})
	if err != nil {
		return nil, err
	}
	return &Client{c: c}, nil
}

// PutItem implements API.
func (c *Client) PutItem(ctx context.Context, in *PutItemInput) (*PutItemOutput, error) {
	var out PutItemOutput
	return &out, c.call(ctx, "PutItem", in, &out)
}

// GetItem implements API.
func (c *Client) GetItem(ctx context.Context, in *GetItemInput) (*GetItemOutput, error) {
	var out GetItemOutput
	return &out, c.call(ctx, "GetItem", in, &out)
}

// UpdateItem implements API.
func (c *Client) UpdateItem(ctx context.Context, in *UpdateItemInput) (*UpdateItemOutput, error) {
	var out UpdateItemOutput
	return &out, c.call(ctx, "UpdateItem", in, &out)
}

// Query implements API.
func (c *Client) Query(ctx context.Context, in *QueryInput) (*QueryOutput, error) {
	var out QueryOutput
	return &out, c.call(ctx, "Query", in, &out)
}

// call sends one operation. The answer's X-Amz-Crc32 header, when
// present, is checked against the body (a mismatch is retried); the body
// is asked for uncompressed so that the checksum covers what is read.
func (c *Client) call(ctx context.Context, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", op, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	h.Set("Accept-Encoding", "identity")
	resp, err := c.c.Do(ctx, awsrest.Request{Method: http.MethodPost, Path: "/", Header: h, Body: body, Verify: checkCRC32})
	var re *awsrest.ResponseError
	if errors.As(err, &re) && re.Code == "ConditionalCheckFailedException" {
		var doc struct {
			Item Item `json:"Item"`
		}
		if jerr := json.Unmarshal(re.Body, &doc); jerr != nil {
			return fmt.Errorf("%s: %w (its item does not decode: %v)", op, re, jerr)
		}
		return &ConditionFailedError{Item: doc.Item, Err: re}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return fmt.Errorf("%s: decode answer: %w", op, err)
	}
	return nil
}

func checkCRC32(r *awsrest.Response) error {
	h := r.Header.Get("X-Amz-Crc32")
	if h == "" {
		return nil
	}
	want, err := strconv.ParseUint(h, 10, 32)
	if err != nil {
		return fmt.Errorf("X-Amz-Crc32 %q is not a checksum", h)
	}
	if got := crc32.ChecksumIEEE(r.Body); got != uint32(want) {
		return fmt.Errorf("answer body's CRC32 %d does not match X-Amz-Crc32 %d", got, want)
	}
	return nil
}

package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stepline/stepline/shared/store"
)

// TableAPI is the part of the DynamoDB client CreateTable uses;
// *dynamodb.Client implements it.
type TableAPI interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// TableDefinition returns the table's definition: string keys PK and SK,
// the two run indexes with their INCLUDE projection, on-demand billing. The
// TTL attribute (AttrTTL) is set separately, as DynamoDB requires.
func TableDefinition(table string) *dynamodb.CreateTableInput {
	attr := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	keys := func(pk, sk string) []types.KeySchemaElement {
		return []types.KeySchemaElement{
			{AttributeName: aws.String(pk), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(sk), KeyType: types.KeyTypeRange},
		}
	}
	projection := &types.Projection{
		ProjectionType:   types.ProjectionTypeInclude,
		NonKeyAttributes: ProjectedAttributes(),
	}
	return &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			attr(AttrPK), attr(AttrSK), attr(AttrGSI1PK), attr(AttrGSI1SK), attr(AttrGSI2PK), attr(AttrGSI2SK),
		},
		KeySchema: keys(AttrPK, AttrSK),
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String(IndexByPipeline), KeySchema: keys(AttrGSI1PK, AttrGSI1SK), Projection: projection},
			{IndexName: aws.String(IndexByStatus), KeySchema: keys(AttrGSI2PK, AttrGSI2SK), Projection: projection},
		},
		BillingMode: types.BillingModePayPerRequest,
	}
}

// CreateTable creates the table (TableDefinition), waits until it is active
// and turns on TTL. It is for tests and local setup; on AWS the CDK stack
// owns the table. An existing table is reported as store.ErrExists.
func CreateTable(ctx context.Context, client TableAPI, table string) error {
	_, err := client.CreateTable(ctx, TableDefinition(table))
	var inUse *types.ResourceInUseException
	if errors.As(err, &inUse) {
		return fmt.Errorf("create table %q: %w", table, store.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create table %q: %w", table, err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 100 * time.Millisecond
		o.MaxDelay = 5 * time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 5*time.Minute); err != nil {
		return fmt.Errorf("create table %q: wait until active: %w", table, err)
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(AttrTTL),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("create table %q: enable TTL: %w", table, err)
	}
	return nil
}

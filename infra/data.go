package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/stepline/stepline/shared/store/dynamo"
)

// addData adds the run store's table and the artifact bucket with its
// access-log bucket.
func (b *builder) addData() {
	def := dynamo.Schema()
	key := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	stage := b.cfg.props.Stage
	b.table = awsdynamodb.NewTable(b.stack, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey: key(def.PartitionKey),
		SortKey:      key(def.SortKey),
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(stage != StageDev),
		},
		TimeToLiveAttribute: jsii.String(def.TTLAttribute),
		Encryption:          awsdynamodb.TableEncryption_AWS_MANAGED,
		DeletionProtection:  jsii.Bool(stage == "" || stage == StageProd),
		RemovalPolicy:       b.cfg.removal(),
	})
	if stage == StageDev {
		suppress(b.table, nagRule{id: "AwsSolutions-DDB3", reason: "A dev deployment is torn down with its data: point-in-time recovery is on in staging and prod."})
	}
	for _, g := range def.Indexes {
		b.table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:        jsii.String(g.Name),
			PartitionKey:     key(g.PartitionKey),
			SortKey:          key(g.SortKey),
			ProjectionType:   awsdynamodb.ProjectionType_INCLUDE,
			NonKeyAttributes: jsii.Strings(g.NonKeyAttributes...),
		})
	}

	logs := awss3.NewBucket(b.stack, jsii.String("AccessLogs"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:         jsii.String("expire-access-logs"),
			Expiration: awscdk.Duration_Days(jsii.Number(90)),
		}},
		RemovalPolicy:     b.cfg.removal(),
		AutoDeleteObjects: jsii.Bool(stage == StageDev),
	})

	b.artifacts = awss3.NewBucket(b.stack, jsii.String("Artifacts"), &awss3.BucketProps{
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		ObjectOwnership:        awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		ServerAccessLogsBucket: logs,
		ServerAccessLogsPrefix: jsii.String("artifacts/"),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                                  jsii.String("expire-artifacts"),
			Expiration:                          awscdk.Duration_Days(jsii.Number(float64(b.cfg.props.ArtifactRetentionDays))),
			AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
		}},
		RemovalPolicy:     b.cfg.removal(),
		AutoDeleteObjects: jsii.Bool(stage == StageDev),
	})
	// The buckets empty themselves in stage dev through CDK's custom
	// resource, whose handler repeats its role's dependency like ours.
	if p := b.stack.Node().TryFindChild(jsii.String("Custom::S3AutoDeleteObjectsCustomResourceProvider")); p != nil {
		if h, ok := p.Node().TryFindChild(jsii.String("Handler")).(awscdk.CfnResource); ok {
			lintExemptResource(h, redundantDependsOn)
		}
	}
}

// addShared adds what several parts use: the approval signing key, the
// webhook token, the dead-letter queue of undelivered events and the alarm
// topic.
func (b *builder) addShared() {
	generated := &awssecretsmanager.SecretStringGenerator{
		PasswordLength:     jsii.Number(64),
		ExcludePunctuation: jsii.Bool(true),
	}
	b.approvalKey = awssecretsmanager.NewSecret(b.stack, jsii.String("ApprovalKey"), &awssecretsmanager.SecretProps{
		Description:          jsii.String("Stepline: HMAC key that signs approval links"),
		GenerateSecretString: generated,
	})
	suppress(b.approvalKey, nagRule{id: "AwsSolutions-SMG4", reason: "Rotating the approval signing key would void every approval link already sent; it is rotated by hand (put a new value) when no approval is pending."})
	b.webhookToken = awssecretsmanager.NewSecret(b.stack, jsii.String("WebhookToken"), &awssecretsmanager.SecretProps{
		Description:          jsii.String("Stepline: bearer token that POST /webhook requires"),
		GenerateSecretString: generated,
	})
	suppress(b.webhookToken, nagRule{id: "AwsSolutions-SMG4", reason: "The webhook token is configured in the alert senders (Alertmanager and others); rotating it is a coordinated change made by hand."})

	b.deadLetters = awssqs.NewQueue(b.stack, jsii.String("DeadLetters"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	suppress(b.deadLetters, nagRule{id: "AwsSolutions-SQS3", reason: "This queue is itself the dead-letter queue of the EventBridge targets and schedules; an alarm fires on its first message."})

	key := awskms.NewKey(b.stack, jsii.String("AlarmTopicKey"), &awskms.KeyProps{
		Description:       jsii.String("Stepline: encrypts the alarm topic"),
		EnableKeyRotation: jsii.Bool(true),
	})
	key.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		Resources:  jsii.Strings("*"),
	}), nil)
	var topicName *string
	if b.split() {
		topicName = jsii.String(b.cfg.names.alarmTopic()) // the pipeline stacks' alarms find it by name
	}
	b.alarmTopic = awssns.NewTopic(b.stack, jsii.String("Alarms"), &awssns.TopicProps{
		TopicName:   topicName,
		DisplayName: jsii.String("Stepline alarms"),
		MasterKey:   key,
		EnforceSSL:  jsii.Bool(true),
	})
	if email := b.cfg.props.AlarmEmail; email != "" {
		b.alarmTopic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(email), nil))
	}
}

// tableAccess is the data access the store needs (package
// shared/store/dynamo calls GetItem, PutItem, UpdateItem and Query) on the
// table and its two indexes; nothing else, no Scan, no DeleteItem.
func (b *builder) tableAccess() awsiam.PolicyStatement {
	arn := *b.table.TableArn()
	resources := []string{arn}
	for _, g := range dynamo.Schema().Indexes {
		resources = append(resources, arn+"/index/"+g.Name)
	}
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("RunStore"),
		Actions:   jsii.Strings("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:Query"),
		Resources: jsii.Strings(resources...),
	})
}

// removal is what happens to data and logs when the stack deletes them:
// destroyed in stage dev, retained otherwise.
func (c *config) removal() awscdk.RemovalPolicy {
	if c.props.Stage == StageDev {
		return awscdk.RemovalPolicy_DESTROY
	}
	return awscdk.RemovalPolicy_RETAIN
}

package dynamo

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/stepline/stepline/shared/store"
)

// Key attributes, index names and the TTL attribute of the table. The CDK
// stack declares the table with exactly these (see the package doc).
const (
	AttrPK     = "PK"
	AttrSK     = "SK"
	AttrGSI1PK = "GSI1PK"
	AttrGSI1SK = "GSI1SK"
	AttrGSI2PK = "GSI2PK"
	AttrGSI2SK = "GSI2SK"
	AttrTTL    = "ttl"

	// IndexByPipeline lists a pipeline's runs, newest first.
	IndexByPipeline = "GSI1"
	// IndexByStatus lists runs in one status, newest first.
	IndexByStatus = "GSI2"
)

// Retention past expiry before DynamoDB's TTL deletes an item. Nothing the
// store decides depends on the deletion (it compares times itself); the TTL
// only keeps the table from growing.
const (
	// ApprovalRetention keeps decided and expired approvals readable for a
	// while after ExpiresAt.
	ApprovalRetention = 30 * 24 * time.Hour
	// DedupRetention is how long a dedup claim outlives its window. A run
	// still active after this long loses its claim.
	DedupRetention = 30 * 24 * time.Hour
)

// Key prefixes.
const (
	prefixRun      = "RUN#"
	prefixStep     = "STEP#"
	prefixPipeline = "PIPELINE#"
	prefixStatus   = "STATUS#"
	prefixApproval = "APPROVAL#"
	prefixDedup    = "DEDUP#"
	skRun          = "RUN"
	skApproval     = "APPROVAL"
	skDedup        = "DEDUP"
)

// API is the DynamoDB access the store needs; *Client implements it. A
// failed condition is reported as a *ConditionFailedError.
type API interface {
	PutItem(ctx context.Context, in *PutItemInput) (*PutItemOutput, error)
	GetItem(ctx context.Context, in *GetItemInput) (*GetItemOutput, error)
	UpdateItem(ctx context.Context, in *UpdateItemInput) (*UpdateItemOutput, error)
	Query(ctx context.Context, in *QueryInput) (*QueryOutput, error)
}

// Store is the DynamoDB store: one table holding runs, step records,
// approvals and dedup claims.
type Store struct {
	db    API
	table string
}

var _ store.Store = (*Store)(nil)

// New returns a store on table through client.
func New(client API, table string) *Store {
	return &Store{db: client, table: table}
}

// escape makes s safe as one part of a composite key: '%' and '#' are
// percent-encoded, so '#' only ever separates parts.
func escape(s string) string {
	if !strings.ContainsAny(s, "%#") {
		return s
	}
	return strings.NewReplacer("%", "%25", "#", "%23").Replace(s)
}

func runPK(id string) string { return prefixRun + escape(id) }

func key(pk, sk string) Item {
	return Item{AttrPK: S(pk), AttrSK: S(sk)}
}

// conditionFailed reports whether err is a failed condition, and returns the
// item the failure carried back (nil when absent or not asked for).
func conditionFailed(err error) (Item, bool) {
	var cf *ConditionFailedError
	if errors.As(err, &cf) {
		return cf.Item, true
	}
	return nil, false
}

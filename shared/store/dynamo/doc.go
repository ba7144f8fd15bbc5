// Package dynamo is the store the Lambda functions use: one DynamoDB table
// (single-table design) holding runs, step records, approvals, dedup claims,
// run claims and schedule tick claims, written with conditional requests so that a retried Lambda never
// duplicates or overwrites a record. It implements store.Store; the local
// engine's checkpoints have no counterpart here (Step Functions keeps that
// state).
//
// # Table
//
// Keys are strings: partition key PK, sort key SK. Billing on demand. TTL on
// the number attribute "ttl" (epoch seconds). Two global secondary indexes,
// both projecting INCLUDE ProjectedAttributes() (a run summary without the
// usage counters, trigger and final output):
//
//	index GSI1 (IndexByPipeline)  GSI1PK (S) hash, GSI1SK (S) range
//	index GSI2 (IndexByStatus)    GSI2PK (S) hash, GSI2SK (S) range
//
// Items (key parts are escaped: '%' → %25, '#' → %23, so '#' only separates):
//
//	run       PK=RUN#<id>                        SK=RUN
//	          GSI1PK=PIPELINE#<pipeline>         GSI1SK=<startedAt>#<id>
//	          GSI2PK=STATUS#<status>             GSI2SK=<startedAt>#<id>
//	          id pipeline status reason stage source team trigger fingerprint
//	          parentRunId configFingerprint inputTokens outputTokens costUsd
//	          startedAt completedAt resumedAt finalOutput usageKeys (SS)
//	step      PK=RUN#<runId>                     SK=STEP#<name>#<attempt, 4 digits>
//	          runId name index attempt executor status error primaryConfidence
//	          verifierConfidence effectiveConfidence output verifierOutput
//	          rawResponse prompt model provider inputTokens outputTokens costUsd
//	          flags (L) startedAt finishedAt durationMs digest
//	approval  PK=APPROVAL#<id>                   SK=APPROVAL   ttl = expiresAt + ApprovalRetention
//	          id runId step pipeline message taskToken createdAt expiresAt
//	          decision decidedBy decidedAt
//	run's     PK=RUN#<runId>                     SK=APPROVAL#<createdAt>#<id>  ttl as the approval's
//	approval  id (a pointer: RunApprovals finds a run's approvals with it)
//	dedup     PK=DEDUP#<pipeline>#<fingerprint>  SK=DEDUP      ttl = claimedAt + window + DedupRetention
//	          pipeline fingerprint runId claimedAt
//	run claim PK=DRIVER#<runId>                  SK=DRIVER     ttl = expiresAt + ClaimRetention
//	          runId holder pid host expiresAt
//	feedback  PK=RUN#<runId>                     SK=FEEDBACK (the run's) or FEEDBACK#<step>
//	          runId step outcome notes submittedAt
//	sample    PK=BUCKET#<bucket key>             SK=<startedAt>#<runId>#<step>
//	          runId step trust deterministicFailed stepOutcome stepFeedbackAt
//	          runOutcome runFeedbackAt
//	bucket    PK=BUCKETS#<pipeline>              SK=<step>#<bucket key>
//	          pipeline step executor model provider promptHash agentVersion
//	tick      PK=TICK#<schedule>                 SK=TICK#<tick> ttl = tick + store.TickRetention
//	          schedule tick holder runId claimedAt
//
// Timestamps are UTC text with nanoseconds and fixed width
// (2006-01-02T15:04:05.000000000Z), so text order is time order in sort keys
// and condition expressions. JSON fields are stored as string attributes
// holding the JSON text. Empty optional attributes are left out.
//
// # Reads
//
//	a run                     GetItem RUN#id / RUN (strongly consistent)
//	a run with its steps      one Query on PK=RUN#id (the run item and its step items)
//	a run's steps             Query PK=RUN#id, SK begins_with STEP#
//	runs of a pipeline        Query GSI1, newest first
//	runs in a status          Query GSI2, newest first
//	pipeline and status       GSI2 with a pipeline filter for running, waiting and
//	                          interrupted (few runs); GSI1 with a status filter otherwise
//	all runs                  one GSI2 query per status, merged
//	a team's runs             any of the above with a team filter (no index:
//	                          the partitions read are read whole if need be)
//	a stage's runs            the same, with a stage filter
//	a page at an offset       the same query, reading Offset+Limit items and
//	                          dropping the first Offset (store.MaxRunOffset
//	                          bounds the cost; every page is a fresh query)
//	an approval               GetItem APPROVAL#id
//	a run's approvals         Query PK=RUN#id, SK begins_with APPROVAL#, then GetItem of each
//	pending approvals         the waiting runs (GSI2, at most MaxWaitingRuns), then each
//	                          one's approvals as above, undecided ones kept
//	a bucket's samples        one Query on PK=BUCKET#key, newest first (labels included:
//	                          feedback writes copy their outcome onto the samples)
//	a pipeline's buckets      Query PK=BUCKETS#pipeline [SK begins_with step#]
//	feedback                  GetItem RUN#id / FEEDBACK[#step]
//
// Index reads are eventually consistent: a list may trail a write by a
// moment.
//
// # Writes
//
//	CreateRun       PutItem if attribute_not_exists(PK)
//	UpdateRun       UpdateItem if the run exists and its status is not terminal
//	                (moves GSI2PK with the status); a failed condition is
//	                explained by a projected GetItem of the status
//	PutStep         PutItem if attribute_not_exists(PK) OR digest = :digest
//	AddUsage        UpdateItem ADD the counters and the key to usageKeys
//	                if the run exists and usageKeys does not contain the key
//	CreateApproval  PutItem of the run's pointer, then PutItem if attribute_not_exists(PK)
//	DecideApproval  UpdateItem if it exists, decision is absent and expiresAt > now
//	ClaimDedup      PutItem if absent; else GetItem of the holder's run status and,
//	                when the claim lapsed, PutItem if runId and claimedAt are
//	                still the ones judged (compare-and-swap)
//	ClaimRun        PutItem if absent, or holder = :me, or expiresAt <= :now, or
//	                holder = :takeover (the refused get the stored item back)
//	ReleaseRun      UpdateItem holder "-", expiresAt the epoch, if holder = :holder
//	RecordSample    UpdateItem SET the sample's own attributes (labels stay), PutItem of
//	                its bucket item, GetItem of the run's feedback and, when
//	                there is some, the run label as below
//	PutRunFeedback  PutItem of the feedback, Query of the run's steps, UpdateItem of
//	                each existing sample: SET runOutcome if runFeedbackAt <= :at
//	PutStepFeedback Query of the step's latest record, PutItem of the feedback,
//	                UpdateItem of its sample (created if the step still waits):
//	                SET stepOutcome if stepFeedbackAt <= :at
//	ClaimTick       PutItem if attribute_not_exists(PK) (the refused get the
//	                stored item back: the same holder's claim is a repeat)
//
// Recording a step costs two writes: PutStep (one PutItem) and AddUsage (one
// UpdateItem). Step items carry no index keys and the indexes do not project
// the usage attributes, so neither write touches an index: each is one write
// unit per KB of item (TestRequestsPerStep pins this). A run costs one
// PutItem to create (plus one unit per index) and one UpdateItem per status
// change (plus the index moves).
//
// # Client
//
// The store speaks DynamoDB's JSON protocol itself (Client, over package
// shared/awsrest: SigV4, retries of throttling and 5xx answers, the
// X-Amz-Crc32 check) with its own attribute values (Value, Item), so the
// Lambda functions do not link the SDK's DynamoDB package, whose
// initialisers alone took about 0.6 ms of every cold start. API is the
// seam for tests that count requests or inject faults. Tables are created
// by the CDK stack from Schema; the tests create theirs in DynamoDB Local
// (package dynamotest).
package dynamo

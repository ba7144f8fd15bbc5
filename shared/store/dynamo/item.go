package dynamo

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/stepline/stepline/shared/store"
	"github.com/stepline/stepline/shared/store/internal/record"
)

// Attribute names of the items (besides the key attributes).
const (
	aID                = "id"
	aPipeline          = "pipeline"
	aStatus            = "status"
	aReason            = "reason"
	aStage             = "stage"
	aSource            = "source"
	aTeam              = "team"
	aTrigger           = "trigger"
	aFingerprint       = "fingerprint"
	aParentRunID       = "parentRunId"
	aConfigFingerprint = "configFingerprint"
	aInputTokens       = "inputTokens"
	aOutputTokens      = "outputTokens"
	aCostUSD           = "costUsd"
	aStartedAt         = "startedAt"
	aCompletedAt       = "completedAt"
	aResumedAt         = "resumedAt"
	aFinalOutput       = "finalOutput"
	aUsageKeys         = "usageKeys"

	aRunID               = "runId"
	aName                = "name"
	aIndex               = "index"
	aAttempt             = "attempt"
	aExecutor            = "executor"
	aError               = "error"
	aPrimaryConfidence   = "primaryConfidence"
	aVerifierConfidence  = "verifierConfidence"
	aEffectiveConfidence = "effectiveConfidence"
	aOutput              = "output"
	aVerifierOutput      = "verifierOutput"
	aRawResponse         = "rawResponse"
	aPrompt              = "prompt"
	aModel               = "model"
	aProvider            = "provider"
	aFlags               = "flags"
	aFinishedAt          = "finishedAt"
	aDurationMS          = "durationMs"
	aDigest              = "digest"
	aAgent               = "agent"
	aAgentVersion        = "agentVersion"
	aIterations          = "iterations"
	aTrace               = "trace"
	aTraceRef            = "traceRef"
	aTrustReport         = "trustReport"

	aStep      = "step"
	aMessage   = "message"
	aTaskToken = "taskToken"
	aCreatedAt = "createdAt"
	aExpiresAt = "expiresAt"
	aDecision  = "decision"
	aDecidedBy = "decidedBy"
	aDecidedAt = "decidedAt"

	aClaimedAt = "claimedAt"
)

// ProjectedAttributes returns the non-key attributes both run indexes
// project (INCLUDE): a run summary. The usage counters are left out on
// purpose, so that AddUsage writes the base item only.
func ProjectedAttributes() []string {
	return []string{aID, aPipeline, aStatus, aReason, aStage, aSource, aTeam, aFingerprint,
		aParentRunID, aConfigFingerprint, aStartedAt, aCompletedAt, aResumedAt}
}

// s, n, f, t and j set an attribute of an item being built; s, f, t and
// j leave empty optional values out.
func (m Item) s(name, v string) {
	if v != "" {
		m[name] = S(v)
	}
}

func (m Item) n(name string, v int64) { m[name] = num(v) }

func (m Item) f(name string, v *float64) {
	if v != nil {
		m[name] = flt(*v)
	}
}

func (m Item) t(name string, v *time.Time) {
	if v != nil {
		m[name] = S(record.FormatTime(*v))
	}
}

func (m Item) j(name string, v json.RawMessage) {
	if len(v) > 0 {
		m[name] = S(string(v))
	}
}

func num(v int64) Value { return N(strconv.FormatInt(v, 10)) }

func flt(v float64) Value { return N(strconv.FormatFloat(v, 'f', -1, 64)) }

func sortKey(t time.Time, id string) string { return record.FormatTime(t) + "#" + id }

func runItem(r store.Run) Item {
	m := Item{
		AttrPK:     S(runPK(r.ID)),
		AttrSK:     S(skRun),
		AttrGSI1PK: S(prefixPipeline + escape(r.Pipeline)),
		AttrGSI1SK: S(sortKey(r.StartedAt, r.ID)),
		AttrGSI2PK: S(prefixStatus + string(r.Status)),
		AttrGSI2SK: S(sortKey(r.StartedAt, r.ID)),
	}
	m.s(aID, r.ID)
	m.s(aPipeline, r.Pipeline)
	m.s(aStatus, string(r.Status))
	m.s(aReason, r.Reason)
	m.s(aStage, r.Stage)
	m.s(aSource, r.Source)
	m.s(aTeam, r.Team)
	m.j(aTrigger, r.Trigger)
	m.s(aFingerprint, r.Fingerprint)
	m.s(aParentRunID, r.ParentRunID)
	m.s(aConfigFingerprint, r.ConfigFingerprint)
	m.n(aInputTokens, r.Usage.InputTokens)
	m.n(aOutputTokens, r.Usage.OutputTokens)
	m.f(aCostUSD, r.Usage.CostUSD)
	m.t(aStartedAt, &r.StartedAt)
	m.t(aCompletedAt, r.CompletedAt)
	m.t(aResumedAt, r.ResumedAt)
	m.j(aFinalOutput, r.FinalOutput)
	return m
}

func stepItem(r store.StepRecord, digest string) Item {
	m := Item{
		AttrPK: S(runPK(r.RunID)),
		AttrSK: S(stepSK(r.Name, r.Attempt)),
	}
	m.s(aRunID, r.RunID)
	m.s(aName, r.Name)
	m.n(aIndex, int64(r.Index))
	m.n(aAttempt, int64(r.Attempt))
	m.s(aExecutor, r.Executor)
	m.s(aStatus, string(r.Status))
	m.s(aError, r.Error)
	m.f(aPrimaryConfidence, r.PrimaryConfidence)
	m.f(aVerifierConfidence, r.VerifierConfidence)
	m.f(aEffectiveConfidence, r.EffectiveConfidence)
	m.j(aOutput, r.Output)
	m.j(aVerifierOutput, r.VerifierOutput)
	m.s(aRawResponse, r.RawResponse)
	m.s(aPrompt, r.Prompt)
	m.s(aPromptHash, r.PromptHash)
	m.s(aModel, r.Model)
	m.s(aProvider, r.Provider)
	m.n(aInputTokens, r.InputTokens)
	m.n(aOutputTokens, r.OutputTokens)
	m.f(aCostUSD, r.CostUSD)
	if len(r.Flags) > 0 {
		l := make([]Value, len(r.Flags))
		for i, f := range r.Flags {
			l[i] = S(f)
		}
		m[aFlags] = L(l...)
	}
	m.t(aStartedAt, &r.StartedAt)
	m.t(aFinishedAt, &r.FinishedAt)
	m.n(aDurationMS, r.DurationMS)
	m.s(aAgent, r.Agent)
	m.s(aAgentVersion, r.AgentVersion)
	if r.Iterations > 0 {
		m.n(aIterations, int64(r.Iterations))
	}
	m.j(aTrace, r.Trace)
	m.s(aTraceRef, r.TraceRef)
	if r.Trust != nil {
		b, _ := json.Marshal(r.Trust) // NormalizeStep checked it: finite numbers only
		m.j(aTrustReport, b)
	}
	m.s(aDigest, digest)
	return m
}

func stepSK(name string, attempt int) string {
	return fmt.Sprintf("%s%s#%04d", prefixStep, escape(name), attempt)
}

func approvalItem(a store.Approval) Item {
	m := Item{
		AttrPK:  S(prefixApproval + escape(a.ID)),
		AttrSK:  S(skApproval),
		AttrTTL: num(a.ExpiresAt.Add(ApprovalRetention).Unix()),
	}
	m.s(aID, a.ID)
	m.s(aRunID, a.RunID)
	m.s(aStep, a.Step)
	m.s(aPipeline, a.Pipeline)
	m.s(aMessage, a.Message)
	m.s(aTaskToken, a.TaskToken)
	m.t(aCreatedAt, &a.CreatedAt)
	m.t(aExpiresAt, &a.ExpiresAt)
	return m
}

// reader decodes attributes, keeping the first error.
type reader struct {
	m   Item
	err error
}

// num returns the decimal text of a number attribute; ok is false when
// it is absent or (recorded in r.err) not a number.
func (r *reader) num(name string) (string, bool) {
	v, present := r.m[name]
	if !present {
		return "", false
	}
	text, ok := v.Num()
	if !ok {
		r.fail(name, "a number")
	}
	return text, ok
}

func (r *reader) s(name string) string {
	v, present := r.m[name]
	if !present {
		return ""
	}
	s, ok := v.Str()
	if !ok {
		r.fail(name, "a string")
	}
	return s
}

func (r *reader) n(name string) int64 {
	text, ok := r.num(name)
	if !ok {
		return 0
	}
	i, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		r.fail(name, "an integer")
	}
	return i
}

func (r *reader) f(name string) *float64 {
	text, ok := r.num(name)
	if !ok {
		return nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		r.fail(name, "a number")
		return nil
	}
	return &f
}

func (r *reader) t(name string) *time.Time {
	s := r.s(name)
	if s == "" {
		return nil
	}
	t, err := record.ParseTime(s)
	if err != nil {
		r.fail(name, "a timestamp")
		return nil
	}
	return &t
}

func (r *reader) time(name string) time.Time {
	if t := r.t(name); t != nil {
		return *t
	}
	return time.Time{}
}

func (r *reader) j(name string) json.RawMessage {
	if s := r.s(name); s != "" {
		return json.RawMessage(s)
	}
	return nil
}

func (r *reader) strings(name string) []string {
	v, present := r.m[name]
	if !present {
		return nil
	}
	l, ok := v.List()
	if !ok {
		r.fail(name, "a list")
		return nil
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, ok := e.Str()
		if !ok {
			r.fail(name, "a list of strings")
			return nil
		}
		out = append(out, s)
	}
	return out
}

func (r *reader) fail(name, want string) {
	if r.err == nil {
		r.err = fmt.Errorf("attribute %q is not %s", name, want)
	}
}

func decodeRun(m Item) (store.Run, error) {
	r := reader{m: m}
	run := store.Run{
		ID:                r.s(aID),
		Pipeline:          r.s(aPipeline),
		Status:            store.RunStatus(r.s(aStatus)),
		Reason:            r.s(aReason),
		Stage:             r.s(aStage),
		Source:            r.s(aSource),
		Team:              r.s(aTeam),
		Trigger:           r.j(aTrigger),
		Fingerprint:       r.s(aFingerprint),
		ParentRunID:       r.s(aParentRunID),
		ConfigFingerprint: r.s(aConfigFingerprint),
		Usage: store.Usage{
			InputTokens:  r.n(aInputTokens),
			OutputTokens: r.n(aOutputTokens),
			CostUSD:      r.f(aCostUSD),
		},
		StartedAt:   r.time(aStartedAt),
		CompletedAt: r.t(aCompletedAt),
		ResumedAt:   r.t(aResumedAt),
		FinalOutput: r.j(aFinalOutput),
	}
	if r.err != nil {
		return store.Run{}, fmt.Errorf("decode run: %w", r.err)
	}
	return run, nil
}

func decodeStep(m Item) (store.StepRecord, error) {
	r := reader{m: m}
	rec := store.StepRecord{
		RunID:               r.s(aRunID),
		Name:                r.s(aName),
		Index:               int(r.n(aIndex)),
		Attempt:             int(r.n(aAttempt)),
		Executor:            r.s(aExecutor),
		Status:              store.StepStatus(r.s(aStatus)),
		Error:               r.s(aError),
		PrimaryConfidence:   r.f(aPrimaryConfidence),
		VerifierConfidence:  r.f(aVerifierConfidence),
		EffectiveConfidence: r.f(aEffectiveConfidence),
		Output:              r.j(aOutput),
		VerifierOutput:      r.j(aVerifierOutput),
		RawResponse:         r.s(aRawResponse),
		Prompt:              r.s(aPrompt),
		PromptHash:          r.s(aPromptHash),
		Model:               r.s(aModel),
		Provider:            r.s(aProvider),
		InputTokens:         r.n(aInputTokens),
		OutputTokens:        r.n(aOutputTokens),
		CostUSD:             r.f(aCostUSD),
		Flags:               r.strings(aFlags),
		StartedAt:           r.time(aStartedAt),
		FinishedAt:          r.time(aFinishedAt),
		DurationMS:          r.n(aDurationMS),
		Agent:               r.s(aAgent),
		AgentVersion:        r.s(aAgentVersion),
		Iterations:          int(r.n(aIterations)),
		Trace:               r.j(aTrace),
		TraceRef:            r.s(aTraceRef),
	}
	if t := r.j(aTrustReport); len(t) > 0 && r.err == nil {
		rec.Trust = new(store.TrustReport)
		if err := json.Unmarshal(t, rec.Trust); err != nil {
			return store.StepRecord{}, fmt.Errorf("decode step: trust report: %w", err)
		}
	}
	if r.err != nil {
		return store.StepRecord{}, fmt.Errorf("decode step: %w", r.err)
	}
	return rec, nil
}

func decodeApproval(m Item) (store.Approval, error) {
	r := reader{m: m}
	a := store.Approval{
		ID:        r.s(aID),
		RunID:     r.s(aRunID),
		Step:      r.s(aStep),
		Pipeline:  r.s(aPipeline),
		Message:   r.s(aMessage),
		TaskToken: r.s(aTaskToken),
		CreatedAt: r.time(aCreatedAt),
		ExpiresAt: r.time(aExpiresAt),
		Decision:  store.Decision(r.s(aDecision)),
		DecidedBy: r.s(aDecidedBy),
		DecidedAt: r.t(aDecidedAt),
	}
	if r.err != nil {
		return store.Approval{}, fmt.Errorf("decode approval: %w", r.err)
	}
	return a, nil
}

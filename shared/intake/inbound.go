package intake

import (
	"strings"
	"time"

	"github.com/stepline/stepline/shared/inbound"
	"github.com/stepline/stepline/shared/pipeline"
)

// The names of package inbound, which holds the code (see its
// documentation).

// Normalizer strategies, sources and decision statuses.
const (
	StrategyMostSevere   = inbound.StrategyMostSevere
	StrategyCommonLabels = inbound.StrategyCommonLabels
	SourceAlertmanager   = inbound.SourceAlertmanager
	SourceGeneric        = inbound.SourceGeneric
	SourceManual         = inbound.SourceManual
	StatusAccepted       = inbound.StatusAccepted
	StatusDeduplicated   = inbound.StatusDeduplicated
	StatusSkippedTesting = inbound.StatusSkippedTesting
)

// Limits and defaults.
const (
	AdminTeam          = inbound.AdminTeam
	DefaultDedupWindow = inbound.DefaultDedupWindow
	DefaultMaxRuns     = inbound.DefaultMaxRuns
	MaxBodyBytes       = inbound.MaxBodyBytes
)

// Errors, the same values as package inbound's.
var (
	ErrBadRequest      = inbound.ErrBadRequest
	ErrUnauthorized    = inbound.ErrUnauthorized
	ErrNotFound        = inbound.ErrNotFound
	ErrTooLarge        = inbound.ErrTooLarge
	ErrUnknownPipeline = inbound.ErrUnknownPipeline
	ErrNoMatch         = inbound.ErrNoMatch
	ErrOverloaded      = inbound.ErrOverloaded
)

// Types.
type (
	Config          = inbound.Config
	Context         = inbound.Context
	Counter         = inbound.Counter
	Decision        = inbound.Decision
	Dedup           = inbound.Dedup
	Intake          = inbound.Intake
	Limiter         = inbound.Limiter
	OverloadedError = inbound.OverloadedError
	Request         = inbound.Request
	Router          = inbound.Router
	Starter         = inbound.Starter
	Store           = inbound.Store
	Tokens          = inbound.Tokens
)

// New is inbound.New.
func New(cfg Config) (*Intake, error) { return inbound.New(cfg) }

// NewRouter is inbound.NewRouter.
func NewRouter(ps []*pipeline.Pipeline) (*Router, error) { return inbound.NewRouter(ps) }

// NewCounter is inbound.NewCounter.
func NewCounter(max int) *Counter { return inbound.NewCounter(max) }

// NewRunID is inbound.NewRunID.
func NewRunID() string { return inbound.NewRunID() }

// Match is inbound.Match.
func Match(ms []pipeline.Match, c Context) bool { return inbound.Match(ms, c) }

// NormalizeAlertmanager is inbound.NormalizeAlertmanager.
func NormalizeAlertmanager(body []byte, strategy string, now time.Time) (Context, error) {
	return inbound.NormalizeAlertmanager(body, strategy, now)
}

// NormalizeGeneric is inbound.NormalizeGeneric.
func NormalizeGeneric(body []byte, now time.Time) (Context, error) {
	return inbound.NormalizeGeneric(body, now)
}

// BearerToken is inbound.BearerToken.
func BearerToken(header string) string { return inbound.BearerToken(header) }

// HTTPStatus is inbound.HTTPStatus.
func HTTPStatus(err error) int { return inbound.HTTPStatus(err) }

// SeverityRank is inbound.SeverityRank.
func SeverityRank(s string) int { return inbound.SeverityRank(s) }

// ParseTokenList is inbound.ParseTokenList, but a value that starts with
// "{" is read as a tokens file is (ParseTokens: YAML, of which JSON is a
// part), as it was before package inbound read it with encoding/json:
// stepline serve's token list keeps accepting a YAML flow mapping.
func ParseTokenList(s string) (Tokens, error) {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
		return ParseTokens([]byte(t))
	}
	return inbound.ParseTokenList(s)
}

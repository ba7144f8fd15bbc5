package pipeline

// DefaultCalibrationMaxDivergence is readiness.calibration.max_divergence
// when it is not set; n_min and bin_width default as a step's
// calibration: does (DefaultCalibrationNMin, DefaultCalibrationBinWidth).
const DefaultCalibrationMaxDivergence = 0.15

// DefaultAcceptableStatuses returns operational.acceptable_statuses when the
// tier does not set it.
func DefaultAcceptableStatuses() []string {
	return []string{"completed"}
}

// Readiness is a pipeline's promotion-readiness criteria: advisory bars,
// judged from the runs recorded (package readiness), that never gate a
// run and never reach the compiled state machine. A nil tier is not
// configured.
type Readiness struct {
	Pos         Pos                   `json:"-"`
	Fields      Fields                `json:"-"`
	Operational *ReadinessOperational `json:"operational,omitempty"`
	Confidence  *ReadinessConfidence  `json:"confidence,omitempty"`
	Accuracy    *ReadinessAccuracy    `json:"accuracy,omitempty"`
	Calibration *ReadinessCalibration `json:"calibration,omitempty"`
}

// ReadinessOperational asks for MinRuns runs in which the step ended in
// one of AcceptableStatuses.
type ReadinessOperational struct {
	Pos                  Pos      `json:"-"`
	Fields               Fields   `json:"-"`
	MinRuns              int      `json:"min_runs"`
	AcceptableStatuses   []string `json:"acceptable_statuses"`
	MaxAgeDays           int      `json:"max_age_days,omitempty"` // 0: any age
	RequireCurrentConfig bool     `json:"require_current_config"`
}

// ReadinessConfidence asks for a mean of the agent's own confidence of at
// least MinConfidence, over at least MinRuns results (0: any number).
type ReadinessConfidence struct {
	Pos                  Pos     `json:"-"`
	Fields               Fields  `json:"-"`
	MinConfidence        float64 `json:"min_confidence"`
	MinRuns              int     `json:"min_runs,omitempty"`
	RequireCurrentConfig bool    `json:"require_current_config"`
}

// ReadinessAccuracy asks for a judged accuracy (feedback labels: correct
// 1, partial 0.5, incorrect 0) of at least MinAccuracy (nil: any) over at
// least MinMarked labelled results, MinHumanMarked of them from a person.
type ReadinessAccuracy struct {
	Pos                  Pos      `json:"-"`
	Fields               Fields   `json:"-"`
	MinAccuracy          *float64 `json:"min_accuracy,omitempty"`
	MinMarked            int      `json:"min_marked"`
	MinHumanMarked       int      `json:"min_human_marked,omitempty"`
	RequireCurrentConfig bool     `json:"require_current_config"`
}

// ReadinessCalibration asks that the confidence can be trusted: in bins
// of BinWidth, a bin with at least NMin labelled results whose mean label
// is within MaxDivergence of the bin's midpoint, and none beyond it.
// RequireCurrentConfig is always true.
type ReadinessCalibration struct {
	Pos                  Pos     `json:"-"`
	Fields               Fields  `json:"-"`
	NMin                 int     `json:"n_min"`
	BinWidth             float64 `json:"bin_width"`
	MaxDivergence        float64 `json:"max_divergence"`
	RequireOwnEvidence   bool    `json:"require_own_evidence"`
	RequireCurrentConfig bool    `json:"require_current_config"`
}

// JudgedExecutor reports whether an executor's answers carry a confidence
// of their own — a model's — which the confidence, accuracy and
// calibration tiers of readiness judge. A human's decision, a webhook's
// HTTP status, a notification and a sub-pipeline's outcome do not.
func JudgedExecutor(executor string) bool {
	switch executor {
	case ExecHuman, ExecWebhook, ExecNotify, ExecPipeline:
		return false
	}
	return true
}

// Judged reports whether a node's recorded answer carries a confidence of
// its own (see JudgedExecutor): a group's when any of its branches does.
func Judged(n Node) bool {
	switch n := n.(type) {
	case *Step:
		return JudgedExecutor(n.Executor)
	case *FanOut:
		return JudgedExecutor(n.Executor)
	case *Parallel:
		for _, b := range n.Branches {
			if JudgedExecutor(b.Executor) {
				return true
			}
		}
	}
	return false
}

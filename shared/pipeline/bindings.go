package pipeline

// The names a step's templates (and its when: and over: expressions, as
// far as they read the run) may use, besides the pipeline's vars and its
// context_template.include leaves. Package task builds the run's part of
// them (Pipeline.RunBindings), package steprun a step's, package notify a
// notification's; the compiler checks templates against them.
const (
	BindSteps        = "steps"           // earlier steps' outputs, by name
	BindLabels       = "labels"          // the trigger's labels (an empty object when none)
	BindTeam         = "team"            // the trigger's team
	BindRunID        = "pipeline_run_id" // the run's ID
	BindPipelineName = "pipeline_name"   // the pipeline's name
	BindCurrentStep  = "current_step"    // the step rendering
	BindLoop         = "loop"            // loop_until: the iteration and prior output
	BindArtifacts    = "artifacts"       // earlier steps' artifacts
	BindItem         = "item"            // fan_out: the branch's item
	BindFanOutIndex  = "fan_out_index"   // fan_out: the item's index
	BindFanOutTotal  = "fan_out_total"   // fan_out: the number of items
	BindStepFailure  = "step_failure"    // a failure webhook's failure
	BindVars         = "vars"            // the pipeline's vars as one object
	BindOutput       = "output"          // a step's own output (expect:, checks)
	// BindTesting is true in a pipeline of stage testing (a name the
	// format Stepline was modelled on binds).
	BindTesting = "_testing"
)

// TemplateNames returns the names every step context defines, in a new
// slice: a var named like one would shadow it.
func TemplateNames() []string {
	return []string{BindSteps, BindLabels, BindTeam, BindRunID, BindPipelineName, BindCurrentStep, BindLoop,
		BindArtifacts, BindItem, BindFanOutIndex, BindFanOutTotal, BindStepFailure, BindVars, BindOutput}
}
